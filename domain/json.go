package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
)

// decodeStrict decodes one JSON value into v, refusing a field v does not
// have, so that a misspelt field is reported rather than silently dropped.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// jsonProblem turns a decoding error into a message naming the field.
func jsonProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return fmt.Sprintf("expected %s, got %s", jsonKind(typeErr.Type.Kind().String()), jsonValueName(typeErr.Value))
		}
		return fmt.Sprintf("%s: expected %s, got %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), jsonValueName(typeErr.Value))
	}
	// The decoder's own wording ("invalid character 'o' in literal null
	// (expecting 'u')") is not for senders: say where, in plain words.
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return fmt.Sprintf("the body is not valid JSON: a character at byte %d cannot be read there", syntaxErr.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "the body is not valid JSON: it ends before its value does"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonValueName names the kind of JSON value a decoding error met.
func jsonValueName(v string) string {
	if strings.HasPrefix(v, "number") {
		return "a number"
	}
	switch v {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "object":
		return "an object"
	case "array":
		return "an array"
	}
	return v
}

// jsonKind names the JSON value a Go kind is read from.
func jsonKind(goKind string) string {
	switch goKind {
	case "int", "int64", "int32", "uint", "uint64":
		return "an integer"
	case "float64", "float32":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	}
	return goKind
}

// kindName names the JSON value a JSON v2 token kind stands for.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "true or false"
	case 'n':
		return "null"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "nothing"
}

// goTypeName names the JSON value a Go type is read from; a JSONObject
// field is an object whatever its underlying type.
func goTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeFor[JSONObject]() {
		return "an object"
	}
	return jsonKind(t.Kind().String())
}

// jsonTypeName names the JSON value a decoded value was read from.
func jsonTypeName(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "true or false"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
