package domain

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// noNUL refuses a text value holding a NUL character: no text or JSON column
// can store one, so it is the caller's input error, named here.
func noNUL(field string, values ...*string) error {
	for _, v := range values {
		if v != nil && strings.IndexByte(*v, 0) >= 0 {
			return Errorf(EINVALID, "%s contains a NUL character", field)
		}
	}
	return nil
}

// jsonHasNUL reports whether encoded JSON text holds a \u0000 escape (a NUL
// in a string or a key), which jsonb cannot store. An escaped backslash
// followed by "u0000" is not one.
func jsonHasNUL(raw []byte) bool {
	if !bytes.Contains(raw, []byte(`\u0000`)) {
		return false
	}
	s := string(raw)
	for i := strings.Index(s, `\u0000`); i >= 0; {
		slashes := 0
		for j := i; j >= 0 && s[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 1 {
			return true
		}
		next := strings.Index(s[i+1:], `\u0000`)
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return false
}

// jsonNumberOutOfRange returns the first number in valid encoded JSON that
// is beyond the range of a float64 (too large, or too small to be told from
// zero), which the storage and most JSON readers cannot keep; "" when none is.
func jsonNumberOutOfRange(raw []byte) string {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString:
			if c == '\\' {
				i++
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' || (c >= '0' && c <= '9'):
			j, exp := i, false
			for j < len(raw) && strings.IndexByte("+-.0123456789eE", raw[j]) >= 0 {
				exp = exp || raw[j] == 'e' || raw[j] == 'E'
				j++
			}
			// Fewer than 300 digits and no exponent always fit.
			if exp || j-i > 300 {
				n := string(raw[i:j])
				mantissa, _, _ := strings.Cut(strings.ToLower(n), "e")
				if f, err := strconv.ParseFloat(n, 64); err != nil || (f == 0 && strings.ContainsAny(mantissa, "123456789")) {
					return n
				}
			}
			i = j - 1
		}
	}
	return ""
}

// Abbreviate shortens s to at most n characters, marking the cut.
func Abbreviate(s string, n int) string {
	count, cut := 0, 0
	for at := range s { // only as far as the cut, however long s is
		if count == n-1 {
			cut = at
		}
		if count == n {
			return s[:cut] + "…"
		}
		count++
	}
	return s
}

// quoted quotes a caller's value for a message, cut to 60 characters:
// enough to recognise it, and no more.
func quoted(s string) string { return strconv.Quote(Abbreviate(s, 60)) }

// Problems collects what is wrong with one input for one message: the first
// Max problems are kept and the others only counted, so the message stays
// short however broken the input is.
type Problems struct {
	Max  int
	list []string
	more int
}

// Add records a problem.
func (p *Problems) Add(problem string) {
	if len(p.list) < p.Max {
		p.list = append(p.list, problem)
		return
	}
	p.more++
}

// List returns the problems kept, in the order they were added.
func (p *Problems) List() []string { return p.list }

// Len is how many problems were added.
func (p *Problems) Len() int { return len(p.list) + p.more }

// String joins the problems kept, with a count of the others
// ("...; and 1234 more").
func (p *Problems) String() string {
	s := strings.Join(p.list, "; ")
	if p.more > 0 {
		s += fmt.Sprintf("; and %d more", p.more)
	}
	return s
}
