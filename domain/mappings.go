package domain

import (
	"strconv"
)

// MappingChoice chooses the mapping a replay maps a stored body with
// (docs/mappings.md#replay): the zero value is the endpoint's current
// mapping; Original the version the post was mapped with when it arrived
// (none, if none ran); Version a version by its number.
type MappingChoice struct {
	Original bool `json:"original,omitempty"`
	Version  int  `json:"version,omitempty"`
}

// ParseMappingChoice reads a mapping_version as a request gives it: ""
// (current), "original", or a version number.
func ParseMappingChoice(s string) (MappingChoice, error) {
	switch s {
	case "", "current":
		return MappingChoice{}, nil
	case "original":
		return MappingChoice{Original: true}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return MappingChoice{}, Errorf(EINVALID, `mapping_version must be a version number, "original" or "current", not %q`, s)
	}
	return MappingChoice{Version: n}, nil
}

// String is the choice as ParseMappingChoice reads it.
func (c MappingChoice) String() string {
	switch {
	case c.Original:
		return "original"
	case c.Version > 0:
		return strconv.Itoa(c.Version)
	}
	return "current"
}
