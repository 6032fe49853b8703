package domain

import "strings"

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
