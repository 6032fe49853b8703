package domain

import (
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxCustomersPerCall is the most customers one POST /customers (or one
// inbound post) may carry.
const MaxCustomersPerCall = 500

// CustomerInput is a customer as an integration posts it.
type CustomerInput struct {
	Company    string  `json:"company" minLength:"1" maxLength:"500" doc:"Company name."`
	Email      *string `json:"email,omitempty" maxLength:"320" doc:"A contact's email; its domain matches existing customers (free-mail domains never do)."`
	Phone      *string `json:"phone,omitempty" maxLength:"50" doc:"A contact's phone number."`
	ExternalID *string `json:"external_id,omitempty" maxLength:"200" doc:"The customer's id in the sending system; matched first."`
}

// Normalize trims the input and checks it: a company is required, an email
// must look like one.
func (c *CustomerInput) Normalize() error {
	if err := noNUL("a field", &c.Company, c.Email, c.Phone, c.ExternalID); err != nil {
		return err
	}
	c.Company = strings.TrimSpace(c.Company)
	if c.Company == "" || utf8.RuneCountInString(c.Company) > 500 {
		return Errorf(EINVALID, "company must be 1 to 500 characters")
	}
	c.Email = trimmedOrNil(c.Email)
	c.Phone = trimmedOrNil(c.Phone)
	c.ExternalID = trimmedOrNil(c.ExternalID)
	if c.Email != nil {
		e := strings.ToLower(*c.Email)
		if _, d, ok := strings.Cut(e, "@"); !ok || strings.HasPrefix(e, "@") || !strings.Contains(d, ".") ||
			strings.ContainsAny(e, " \t\r\n,;<>") || strings.Count(e, "@") != 1 || utf8.RuneCountInString(e) > 320 {
			return Errorf(EINVALID, "email %s is not an email address", quoted(*c.Email))
		}
		c.Email = &e
	}
	if c.Phone != nil && utf8.RuneCountInString(*c.Phone) > 50 {
		return Errorf(EINVALID, "phone is longer than 50 characters")
	}
	if c.ExternalID != nil && utf8.RuneCountInString(*c.ExternalID) > 200 {
		return Errorf(EINVALID, "external_id is longer than 200 characters")
	}
	return nil
}

// EmailDomain is the domain of the email, or "" without one.
func (c CustomerInput) EmailDomain() string {
	if c.Email == nil {
		return ""
	}
	_, d, _ := strings.Cut(*c.Email, "@")
	return d
}

// freeMail are consumer mailbox domains: many unrelated people share them, so
// they never identify a customer.
var freeMail = map[string]bool{
	"gmail.com": true, "googlemail.com": true, "outlook.com": true, "hotmail.com": true, "hotmail.co.uk": true,
	"live.com": true, "live.co.uk": true, "msn.com": true, "yahoo.com": true, "yahoo.co.uk": true, "ymail.com": true,
	"icloud.com": true, "me.com": true, "mac.com": true, "aol.com": true, "proton.me": true, "protonmail.com": true,
	"gmx.com": true, "gmx.de": true, "gmx.net": true, "web.de": true, "mail.com": true, "zoho.com": true,
	"yandex.com": true, "yandex.ru": true, "btinternet.com": true, "sky.com": true, "virginmedia.com": true,
	"talktalk.net": true, "orange.fr": true, "wanadoo.fr": true, "free.fr": true, "laposte.net": true, "libero.it": true,
	"qq.com": true, "163.com": true, "126.com": true, "hey.com": true, "fastmail.com": true, "tutanota.com": true,
}

// IsFreeMail reports whether domain is a consumer mailbox domain.
func IsFreeMail(domain string) bool { return freeMail[strings.ToLower(domain)] }

// MatchDomain is the domain an entry may be matched by: its email's domain,
// unless that is a free-mail domain.
func (c CustomerInput) MatchDomain() string {
	d := c.EmailDomain()
	if d == "" || IsFreeMail(d) {
		return ""
	}
	return d
}

// NormalizeCustomers checks a batch: at most 500 entries, each valid. The
// first problem names its index; the batch is then rejected whole.
func NormalizeCustomers(entries []CustomerInput) error {
	if len(entries) > MaxCustomersPerCall {
		return Errorf(EINVALID, "at most %d customers per call (got %d)", MaxCustomersPerCall, len(entries))
	}
	for i := range entries {
		if err := entries[i].Normalize(); err != nil {
			return Errorf(EINVALID, "customers[%d]: %s", i, ErrorMessage(err))
		}
	}
	return nil
}

// UpsertCustomersBody is the body of a customers upsert (POST /customers
// and the upsert_customers action).
type UpsertCustomersBody struct {
	Customers []CustomerInput `json:"customers"`
}

// minCustomerBytes is the size of the smallest customer, {"company":"A"},
const minCustomerBytes = 16

var customerFieldNames = []string{"company", "email", "phone", "external_id"}

// DecodeCustomersBody reads {"customers": [...]} carrying at most max
// customers: the array is read one customer at a time, and the one after
// max is ETOOLARGE before the rest of the body is looked at. An unknown
// field, a value of the wrong type, a repeated name or invalid UTF-8 is
// EINVALID naming the field. The entries are not normalized.
func DecodeCustomersBody(body []byte, max int) (UpsertCustomersBody, error) {
	return decodeCustomersBody(max, func(out any) error { return jsonv2.Unmarshal(body, out, jsonv2.RejectUnknownMembers(true)) })
}

// ReadCustomersBody is DecodeCustomersBody for a body read as it arrives,
// never held whole.
func ReadCustomersBody(r io.Reader, max int) (UpsertCustomersBody, error) {
	return decodeCustomersBody(max, func(out any) error { return jsonv2.UnmarshalRead(r, out, jsonv2.RejectUnknownMembers(true)) })
}

func decodeCustomersBody(max int, unmarshal func(any) error) (UpsertCustomersBody, error) {
	b := struct {
		Customers limitedArray[CustomerInput] `json:"customers"`
	}{Customers: limitedArray[CustomerInput]{max: max, minBytes: minCustomerBytes}}
	err := unmarshal(&b)
	var se *jsonv2.SemanticError
	switch {
	case err == nil && !b.Customers.read, errors.Is(err, errNotArray):
		return UpsertCustomersBody{}, Errorf(EINVALID, "customers is required and must be an array")
	case errors.Is(err, errTooManyItems):
		return UpsertCustomersBody{}, tooMany(max, "customers")
	case errors.As(err, &se) && se.JSONPointer == "":
		return UpsertCustomersBody{}, Errorf(EINVALID, "the body must be a JSON object with a customers array")
	case errors.As(err, &se) && se.JSONPointer.Parent() == "":
		return UpsertCustomersBody{}, Errorf(EINVALID, "unknown field %s: the body has only customers", quoted(se.JSONPointer.LastToken()))
	case err != nil && !errors.Is(err, jsontext.ErrDuplicateName):
		return UpsertCustomersBody{}, syntaxError(err, invalidJSON(err, "customer", customerFieldNames))
	case err != nil:
		return UpsertCustomersBody{}, invalidJSON(err, "customer", customerFieldNames)
	}
	return UpsertCustomersBody{Customers: b.Customers.items}, nil
}

// Request text limits, in characters.
const (
	MaxRequestText  = 100000
	MaxRequestTitle = 200
)

// NewRequest is a request thread opened from RFQ or enquiry text.
type NewRequest struct {
	Text  string
	Title string
}

// Normalize checks the limits (counted in characters, not bytes) and
// defaults the title to the text's first non-empty line, cut to 200
// characters.
func (r *NewRequest) Normalize() error {
	if err := noNUL("text or title", &r.Text, &r.Title); err != nil {
		return err
	}
	if strings.TrimSpace(r.Text) == "" {
		return Errorf(EINVALID, "text is required")
	}
	if n := utf8.RuneCountInString(r.Text); n > MaxRequestText {
		return Errorf(EINVALID, "text is %d characters; the most is %d", n, MaxRequestText)
	}
	r.Title = strings.TrimSpace(r.Title)
	if n := utf8.RuneCountInString(r.Title); n > MaxRequestTitle {
		return Errorf(EINVALID, "title is %d characters; the most is %d", n, MaxRequestTitle)
	}
	if r.Title == "" {
		for line := range strings.SplitSeq(r.Text, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				r.Title = line
				break
			}
		}
		if utf8.RuneCountInString(r.Title) > MaxRequestTitle {
			r.Title = string([]rune(r.Title)[:MaxRequestTitle])
		}
	}
	return nil
}
