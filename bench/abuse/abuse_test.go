package main

import (
	"strings"
	"testing"
)

// TestAbuseSuiteFindsNoAnswerOutsideTheSpec runs the abuse suite at its
// small size against a real `commerce dev`: every kind of check at least
// once, with four clients at once.
func TestAbuseSuiteFindsNoAnswerOutsideTheSpec(t *testing.T) {
	if testing.Short() {
		t.Skip("the abuse suite builds the commerce binary and runs it against Postgres for about a minute: skipped under -short")
	}
	rep, err := Run(t.Context(), Options{Size: sizes["small"], Clients: 4, Out: t.Output()})
	if err != nil {
		t.Fatal(err)
	}
	if failed := rep.FailedChecks(); len(failed) > 0 {
		t.Fatalf("%d checks failed: %s", len(failed), strings.Join(failed, "; "))
	}
}
