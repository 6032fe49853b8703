package domain

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"fmt"
)

// JSONObject is a free-form JSON object (product attributes, external
// references, addresses) kept as its encoded text: read from a jsonb column
// and written to the wire without being decoded in between.
type JSONObject json.RawMessage

// ObjectOf encodes m as a JSONObject.
func ObjectOf(m map[string]any) JSONObject {
	if m == nil {
		return JSONObject("{}")
	}
	b, _ := json.Marshal(m)
	return JSONObject(b)
}

// Map decodes the object.
func (o JSONObject) Map() map[string]any {
	m := map[string]any{}
	_ = json.Unmarshal(o, &m)
	return m
}

// MarshalJSON implements json.Marshaler; an empty value is {}.
func (o JSONObject) MarshalJSON() ([]byte, error) {
	if len(o) == 0 {
		return []byte("{}"), nil
	}
	return o, nil
}

// UnmarshalJSON accepts a JSON object, or null for none.
func (o *JSONObject) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*o = nil
		return nil
	}
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("expected a JSON object")
	}
	*o = append((*o)[:0], b...)
	return nil
}

// Scan implements sql.Scanner for json and jsonb columns; NULL reads as {}.
func (o *JSONObject) Scan(src any) error { return scanJSONText(o, src, "{}", "JSONObject") }

// Value implements driver.Valuer.
func (o JSONObject) Value() (driver.Value, error) {
	if len(o) == 0 {
		return "{}", nil
	}
	return string(o), nil
}

// JSONArray is a free-form JSON array of objects (message blocks) kept as
// its encoded text.
type JSONArray json.RawMessage

// MarshalJSON implements json.Marshaler; an empty value is [].
func (a JSONArray) MarshalJSON() ([]byte, error) {
	if len(a) == 0 {
		return []byte("[]"), nil
	}
	return a, nil
}

// UnmarshalJSON accepts a JSON array.
func (a *JSONArray) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' {
		return fmt.Errorf("expected a JSON array")
	}
	*a = append((*a)[:0], b...)
	return nil
}

// Scan implements sql.Scanner for json and jsonb columns; NULL reads as [].
func (a *JSONArray) Scan(src any) error { return scanJSONText(a, src, "[]", "JSONArray") }

// Value implements driver.Valuer.
func (a JSONArray) Value() (driver.Value, error) {
	if len(a) == 0 {
		return "[]", nil
	}
	return string(a), nil
}

// scanJSONText keeps a json or jsonb column's text in dst, copying the
// driver's bytes because the driver may reuse them after Scan returns; a
// NULL column reads as empty.
func scanJSONText[T ~[]byte](dst *T, src any, empty, typeName string) error {
	switch v := src.(type) {
	case []byte:
		*dst = append((*dst)[:0], v...)
	case string:
		*dst = T(v)
	case nil:
		*dst = T(empty)
	default:
		return fmt.Errorf("cannot scan %T into %s", src, typeName)
	}
	return nil
}
