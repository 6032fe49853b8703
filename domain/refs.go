package domain

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxRefs is the most references a receipt keeps.
const MaxRefs = 50

// MaxRefLength is the longest value kept as a reference (in characters);
// a longer one is not a reference anyone searches by.
const MaxRefLength = 200

// MinRefPrefix is the shortest search that also matches as a prefix:
// a shorter one matches a reference only whole.
const MinRefPrefix = 3

// refFields are the body fields whose string values are business
// references, at any depth: a customer sync's customers carry their
// external_id inside an array.
var refFields = map[string]bool{
	"order_ref":       true,
	"quote_ref":       true,
	"invoice_ref":     true,
	"po_number":       true,
	"supplier_ref":    true,
	"delivery_ref":    true,
	"consignment_ref": true,
	"external_id":     true,
	"external_ref":    true,
}

// ExtractRefs returns the business references a posted body names (see
// docs/design.md#references), in the order the body gives them, each once
// (compared case-insensitively, keeping its first spelling), at most
// MaxRefs. A body that is not JSON, or stops being JSON part-way (a body
// kept only in part), gives the references read before that point.
func ExtractRefs(body []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var refs []string
	seen := map[string]bool{}
	// inObject[i] says whether the container at depth i is an object;
	// expectKey whether the next token of that object is a key.
	var inObject []bool
	expectKey := false
	key := ""
	for len(refs) < MaxRefs {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				inObject = append(inObject, true)
				expectKey = true
				continue
			case '[':
				inObject = append(inObject, false)
				expectKey = false
				continue
			default:
				inObject = inObject[:max(len(inObject)-1, 0)]
			}
		case string:
			if expectKey {
				key, expectKey = t, false
				continue
			}
			if refFields[key] {
				v := strings.TrimSpace(t)
				k := RefKey(v)
				if v != "" && utf8.RuneCountInString(v) <= MaxRefLength && !strings.ContainsRune(v, 0) && !seen[k] {
					seen[k] = true
					refs = append(refs, v)
				}
			}
		}
		// A value ended: an object's next token is a key again.
		expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
		key = ""
	}
	return refs
}

// FirstRef is the first of refs, or "": what a run's summary names.
func FirstRef(refs []string) string {
	if len(refs) == 0 {
		return ""
	}
	return refs[0]
}

// RefKey is a reference as it is indexed and searched: trimmed and in
// lower case, so that "so-2026-0202" finds "SO-2026-0202".
func RefKey(ref string) string { return strings.ToLower(strings.TrimSpace(ref)) }

// RefKeys are the search keys of refs, each once.
func RefKeys(refs []string) []string {
	keys := make([]string, 0, len(refs))
	for _, r := range refs {
		k := RefKey(r)
		if k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}
