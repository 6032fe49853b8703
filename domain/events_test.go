package domain

import "testing"

func TestParseEventTypes(t *testing.T) {
	if types, err := ParseEventTypes("all"); err != nil || len(types) != 0 {
		t.Fatalf("all: %v %v", types, err)
	}
	if types, err := ParseEventTypes(" order.status_changed, customer.created,order.status_changed "); err != nil || len(types) != 2 {
		t.Fatalf("two types: %v %v", types, err)
	}
	if _, err := ParseEventTypes("order.shipped"); ErrorCode(err) != EINVALID {
		t.Fatalf("unknown type: %v", err)
	}
}
