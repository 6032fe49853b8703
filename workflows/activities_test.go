package workflows

import (
	"reflect"
	"testing"
)

// The workflows call activities by name; each name must be a method of the
// Activities interface, which package activities implements (it says so
// where it is compiled).
func TestActivityNamesAreTheInterfaceMethods(t *testing.T) {
	iface := reflect.TypeFor[Activities]()
	names := []string{applyInbound, applyInboundStep, recordOutcome, matchSupplierInvoice, raiseNoReceipt, deliverWebhook, admitRetry, expireQuote,
		replayBatchChunk, endReplayBatch}
	if len(names) != iface.NumMethod() {
		t.Fatalf("%d activity names for %d methods of Activities", len(names), iface.NumMethod())
	}
	for _, name := range names {
		if _, ok := iface.MethodByName(name); !ok {
			t.Errorf("activity %q is not a method of Activities", name)
		}
	}
}
