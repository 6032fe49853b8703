package domain

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDecodeCustomersBodyNamesTheProblem(t *testing.T) {
	for _, c := range []struct {
		body  string
		code  Code
		names string
	}{
		{`{}`, EINVALID, "customers is required"},
		{`{"customers": "x"}`, EINVALID, "customers is required and must be an array"},
		{`{"customers": null}`, EINVALID, "customers is required"},
		{`[]`, EINVALID, "the body must be a JSON object"},
		{`{"customers": [1]}`, EINVALID, "customers[0]: expected an object, got a number"},
		{`{"customers": [{"company": "A"}, {"company": 1}]}`, EINVALID, "customers[1].company: expected a string"},
		{`{"customers": [{"company": "A", "colour": 1}]}`, EINVALID, `customers[0]: unknown field "colour"`},
		{`{"customers": [{"company": "A", "company": "B"}]}`, EINVALID, "customers[0].company is given twice"},
		{`{"customers": [], "extra": 1}`, EINVALID, `unknown field "extra"`},
		{"{\"customers\": [{\"company\": \"\xff\"}]}", EINVALID, "invalid UTF-8"},
		{`{"customers": [{}`, EINVALID, "not valid JSON"},
		{`{"customers": []} {}`, EINVALID, "not valid JSON"},
		{`{"customers": [{}, {}, {}]}`, ETOOLARGE, "more than 2 customers"},
	} {
		_, err := DecodeCustomersBody([]byte(c.body), 2)
		if ErrorCode(err) != c.code || !strings.Contains(ErrorMessage(err), c.names) {
			t.Errorf("%s: %v (%s), want %s naming %q", c.body, err, ErrorCode(err), c.code, c.names)
		}
	}
	b, err := DecodeCustomersBody([]byte(`{"customers": [{"company": "A", "email": "a@b.example"}, {"company": "B"}]}`), 2)
	if err != nil || len(b.Customers) != 2 || *b.Customers[0].Email != "a@b.example" {
		t.Fatalf("%+v %v", b, err)
	}
}

// The customer after max is refused before anything after it is read, so a
// body of a million customers costs no more than max of them.
func TestDecodeCustomersBodyStopsAtTheCustomerAfterItsLimit(t *testing.T) {
	body := `{"customers": [` + strings.Repeat(`{},`, 1_000_000) + ` never read`
	if _, err := ParseInbound(ActionUpsertCustomers, []byte(body)); ErrorCode(err) != ETOOLARGE || !strings.Contains(ErrorMessage(err), "500") {
		t.Fatalf("upsert_customers: %v", err)
	}
	if _, err := DecodeCustomersBody([]byte(body), MaxCustomersPerCall); ErrorCode(err) != ETOOLARGE {
		t.Fatalf("%v", err)
	}
}

// A message quoting a caller's value quotes at most its start, and no
// message is longer than MaxMessage characters.
func TestErrorMessagesAreCutShort(t *testing.T) {
	huge := strings.Repeat("é", 1<<20)
	if m := Errorf(EINVALID, "%s", huge).Message; utf8.RuneCountInString(m) != MaxMessage || !strings.HasSuffix(m, "…") {
		t.Fatalf("a message of %d characters", utf8.RuneCountInString(m))
	}
	email := huge + "@x"
	p := ProductInput{SKU: "A", Title: "t", Currency: huge}
	for name, err := range map[string]error{
		"email":    (&CustomerInput{Company: "A", Email: &email}).Normalize(),
		"currency": p.Normalize("GBP"),
		"date":     func() error { _, err := ParseDate(huge); return err }(),
	} {
		if m := ErrorMessage(err); err == nil || utf8.RuneCountInString(m) > 150 {
			t.Errorf("%s: %d characters: %.200s", name, utf8.RuneCountInString(m), m)
		}
	}
}

func TestProblemsKeepTheFirstAndCountTheRest(t *testing.T) {
	p := Problems{Max: 2}
	if p.Len() != 0 || p.String() != "" {
		t.Fatalf("empty: %d %q", p.Len(), p.String())
	}
	for _, s := range []string{"a", "b", "c", "d"} {
		p.Add(s)
	}
	if p.Len() != 4 || p.String() != "a; b; and 2 more" || len(p.List()) != 2 {
		t.Fatalf("%d %q %v", p.Len(), p.String(), p.List())
	}
}
