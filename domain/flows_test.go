package domain

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
)

// A match workflow ID keeps a short invoice reference readable, replaces a
// long one by its start and a hash, is the same for the same reference,
// differs for different ones, and never passes MaxWorkflowIDLength.
func TestMatchWorkflowIDIsDeterministicBoundedAndDistinct(t *testing.T) {
	po := uuid.MustParse("0193e3c0-0000-7000-8000-000000000021")
	prefix := "match/" + po.String() + "/"
	long := strings.Repeat("INV-2026-", 56)[:500]
	for _, c := range []struct {
		name, ref string
		whole     bool
	}{
		{"short", "INV-1", true},
		{"with slashes and spaces", "INV 2026/11/22", true},
		{"at the limit kept whole", strings.Repeat("r", matchRefKept), true},
		{"one byte over", strings.Repeat("r", matchRefKept+1), false},
		{"500 characters", long, false},
		{"500 multi-byte characters", strings.Repeat("é", 500), false},
		{"four-byte characters across the cut", strings.Repeat("𝄞", 100), false},
	} {
		id := MatchWorkflowID(po, c.ref)
		if id != MatchWorkflowID(po, c.ref) {
			t.Errorf("%s: not deterministic", c.name)
		}
		if len(id) > MaxWorkflowIDLength {
			t.Errorf("%s: %d bytes, over %d", c.name, len(id), MaxWorkflowIDLength)
		}
		if !strings.HasPrefix(id, prefix) {
			t.Errorf("%s: %q does not start with %q", c.name, id, prefix)
		}
		ref := strings.TrimPrefix(id, prefix)
		if c.whole && ref != c.ref {
			t.Errorf("%s: reference %q not kept whole in %q", c.name, c.ref, id)
		}
		if !c.whole && (len(ref) <= matchRefKept || !strings.HasPrefix(c.ref, ref[:strings.LastIndex(ref, "~")]) || !utf8.ValidString(ref)) {
			t.Errorf("%s: %q is not the reference's start and a hash, longer than any kept whole", c.name, ref)
		}
	}
	// References that share their first bytes get distinct IDs; so do the
	// same reference on two purchase orders.
	if MatchWorkflowID(po, long) == MatchWorkflowID(po, long[:499]+"X") {
		t.Error("two long references with the same start share an ID")
	}
	if MatchWorkflowID(po, "INV-1") == MatchWorkflowID(uuid.New(), "INV-1") {
		t.Error("two purchase orders share an ID")
	}
}
