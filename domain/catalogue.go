package domain

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// AttrType is the declared type of a catalogue attribute.
type AttrType string

// Attribute types.
const (
	AttrString  AttrType = "string"
	AttrNumber  AttrType = "number"
	AttrInteger AttrType = "integer"
	AttrBoolean AttrType = "boolean"
	AttrEnum    AttrType = "enum"
)

// AttrTypes lists the attribute types.
var AttrTypes = []AttrType{AttrString, AttrNumber, AttrInteger, AttrBoolean, AttrEnum}

// CatalogueField declares one product attribute of a catalogue schema.
type CatalogueField struct {
	Key      string   `json:"key"`
	Type     AttrType `json:"type"`
	Options  []string `json:"options,omitempty"`
	Required bool     `json:"required,omitempty"`
}

// CatalogueSchema declares the attributes of an organisation's products; a
// bulk import naming it coerces each product's attrs to the declared types.
type CatalogueSchema struct {
	ID        uuid.UUID        `json:"id"`
	Name      string           `json:"name"`
	Fields    []CatalogueField `json:"fields"`
	CreatedAt Timestamp        `json:"created_at"`
}

// Validate checks the schema's own declarations.
func (s *CatalogueSchema) Validate() error {
	s.Name = strings.TrimSpace(s.Name)
	if s.Name == "" || len(s.Name) > 200 {
		return Errorf(EINVALID, "schema name must be 1 to 200 characters")
	}
	seen := map[string]bool{}
	for i, f := range s.Fields {
		if strings.TrimSpace(f.Key) == "" {
			return Errorf(EINVALID, "fields[%d]: key is required", i)
		}
		if seen[f.Key] {
			return Errorf(EINVALID, "fields[%d]: key %q repeats", i, f.Key)
		}
		seen[f.Key] = true
		if !slices.Contains(AttrTypes, f.Type) {
			return Errorf(EINVALID, "fields[%d]: type %q is not string, number, integer, boolean or enum", i, f.Type)
		}
		if (f.Type == AttrEnum) != (len(f.Options) > 0) {
			return Errorf(EINVALID, "fields[%d]: options are given for, and only for, an enum", i)
		}
	}
	return nil
}

// Coerce converts attrs to the declared types in place: "12" becomes 12 for
// an integer, "yes" true for a boolean, an enum value must be one of the
// options (matched case-insensitively, stored as declared). Attributes the
// schema does not declare are kept as they are. The first value that cannot
// be coerced, or a required attribute that is missing, is EINVALID.
func (s *CatalogueSchema) Coerce(attrs map[string]any) error {
	for _, f := range s.Fields {
		v, ok := attrs[f.Key]
		if !ok || v == nil {
			if f.Required {
				return Errorf(EINVALID, "attrs.%s is required by schema %q", f.Key, s.Name)
			}
			continue
		}
		c, err := coerce(f, v)
		if err != nil {
			return Errorf(EINVALID, "attrs.%s: %s", f.Key, err)
		}
		attrs[f.Key] = c
	}
	return nil
}

func coerce(f CatalogueField, v any) (any, error) {
	// A number read as written: an integer attribute takes it exactly,
	// every other rule as a float64.
	if n, ok := v.(json.Number); ok {
		if f.Type == AttrInteger {
			if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
				return i, nil
			}
		}
		x, err := n.Float64()
		if err != nil || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s is out of range", Abbreviate(n.String(), 40))
		}
		v = x
	}
	switch f.Type {
	case AttrString:
		switch x := v.(type) {
		case string:
			return x, nil
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), nil
		case bool:
			return strconv.FormatBool(x), nil
		}
	case AttrNumber:
		switch x := v.(type) {
		case float64:
			return x, nil
		case string:
			if n, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(n, 0) && !math.IsNaN(n) {
				return n, nil
			}
			return nil, fmt.Errorf("%s is not a number", quoted(x))
		}
	case AttrInteger:
		switch x := v.(type) {
		case float64:
			if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
				return int64(x), nil
			}
			return nil, fmt.Errorf("%v is not an integer", x)
		case string:
			if n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64); err == nil {
				return n, nil
			}
			return nil, fmt.Errorf("%s is not an integer", quoted(x))
		}
	case AttrBoolean:
		switch x := v.(type) {
		case bool:
			return x, nil
		case float64:
			if x == 0 || x == 1 {
				return x == 1, nil
			}
		case string:
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "yes", "y", "1", "on":
				return true, nil
			case "false", "no", "n", "0", "off":
				return false, nil
			}
			return nil, fmt.Errorf("%s is not yes or no", quoted(x))
		}
	case AttrEnum:
		var s string
		switch x := v.(type) {
		case string:
			s = strings.TrimSpace(x)
		case float64:
			s = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			return nil, fmt.Errorf("expected one of %s", strings.Join(f.Options, ", "))
		}
		for _, o := range f.Options {
			if strings.EqualFold(o, s) {
				return o, nil
			}
		}
		return nil, fmt.Errorf("%s is not one of %s", quoted(s), strings.Join(f.Options, ", "))
	}
	return nil, fmt.Errorf("expected %s, got %s", f.Type, jsonTypeName(v))
}
