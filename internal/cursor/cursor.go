// Package cursor makes the opaque pagination cursors of every paged list:
// base64url of the list name, a digest of what the list was filtered by and
// the last row's sort key, authenticated with HMAC-SHA256 so a client can
// neither forge one nor carry one to another list, filter or organisation.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"

	"github.com/commerce-integration/commerce/domain"
)

// Codec encodes and decodes cursors under a key derived from the service key.
type Codec struct{ key []byte }

// New returns a Codec whose MAC key is derived from serviceKey, so the
// cursor key differs from the key that seals secrets.
func New(serviceKey []byte) *Codec {
	m := hmac.New(sha256.New, serviceKey)
	m.Write([]byte("commerce cursor v1"))
	return &Codec{key: m.Sum(nil)}
}

type payload struct {
	List    string   `json:"l"`
	Binding []byte   `json:"b"`
	Key     []string `json:"k"`
}

const macSize = 16

func digest(binding string) []byte {
	h := sha256.Sum256([]byte(binding))
	return h[:8]
}

// Encode returns the cursor for the page after the row whose sort key is
// key, in list, for a request bound by binding (the organisation and the
// list's filters, written canonically by the caller).
func (c *Codec) Encode(list, binding string, key ...string) string {
	body, _ := json.Marshal(payload{List: list, Binding: digest(binding), Key: key})
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	return base64.RawURLEncoding.EncodeToString(append(body, m.Sum(nil)[:macSize]...))
}

// Decode checks a cursor and returns its sort key. A cursor that was altered,
// made for another list, or made under other filters or another
// organisation is EINVALID. want is the number of sort key parts the list uses.
func (c *Codec) Decode(token, list, binding string, want int) ([]string, error) {
	invalid := domain.Errorf(domain.EINVALID, "cursor is not valid for this list")
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) <= macSize {
		return nil, invalid
	}
	body, mac := raw[:len(raw)-macSize], raw[len(raw)-macSize:]
	m := hmac.New(sha256.New, c.key)
	m.Write(body)
	if !hmac.Equal(mac, m.Sum(nil)[:macSize]) {
		return nil, invalid
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil || p.List != list || !hmac.Equal(p.Binding, digest(binding)) || len(p.Key) != want {
		return nil, invalid
	}
	return p.Key, nil
}
