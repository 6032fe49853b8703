package e2e

import (
	"testing"

	"github.com/google/uuid"
)

func mustID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatalf("%q is not an id", s)
	}
	return id
}
