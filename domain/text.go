package domain

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf8"
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

// abbreviate shortens s to at most n characters, marking the cut.
func abbreviate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
