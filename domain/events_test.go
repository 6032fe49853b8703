package domain

import (
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"
)

var update = flag.Bool("update", false, "rewrite the generated parts of the docs")

// The markers around the generated event table of docs/webhooks.md.
const (
	catalogueBegin = "<!-- The table below is generated from domain.EventCatalogue: do not edit it by hand. -->\n"
	catalogueEnd   = "<!-- End of the generated table. -->\n"
)

// TestDocsListTheEventCatalogue holds the event table of docs/webhooks.md
// to the catalogue the service emits and documents in its OpenAPI
// document: a type added, removed or changed fails here until the table is
// written again with -update.
func TestDocsListTheEventCatalogue(t *testing.T) {
	const path = "../docs/webhooks.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin, end := strings.Index(doc, catalogueBegin), strings.Index(doc, catalogueEnd)
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the markers of the generated event table", path)
	}
	got, want := doc[begin+len(catalogueBegin):end], EventCatalogueTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:begin+len(catalogueBegin)]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("the event table of %s is not the catalogue's; run go test ./domain -run TestDocsListTheEventCatalogue -update\n--- in the file\n%s--- from the catalogue\n%s", path, got, want)
}

// Every event type is in the catalogue once, and its data is a struct.
func TestEventCatalogueNamesEachTypeOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range EventCatalogue {
		if seen[e.Type] || e.Data.Kind().String() != "struct" || e.When == "" {
			t.Errorf("catalogue entry %+v: repeated, without a struct for its data, or without its when", e)
		}
		seen[e.Type] = true
	}
	if len(EventTypes) != len(EventCatalogue) {
		t.Fatalf("%d event types for %d catalogue entries", len(EventTypes), len(EventCatalogue))
	}
}

// Every event type's data names the entity it is about, and New carries it.
func TestEveryEventNamesItsEntity(t *testing.T) {
	namer := reflect.TypeFor[entityNamer]()
	for _, e := range EventCatalogue {
		if !e.Data.Implements(namer) {
			t.Errorf("%s: its data %s names no entity", e.Type, e.Data)
		}
	}
	id := uuid.New()
	if e := OrderInvoiceRecorded.New(OrderInvoiceRecordedData{OrderID: id}); e.Entity != (Entity{EntityOrder, id.String()}) {
		t.Fatalf("an invoice recorded on an order is about %+v, want the order", e.Entity)
	}
	if e := StockMovementCreated.New(StockMovement{ID: uuid.New(), LineID: id}); e.Entity.Key() != "stock_line:"+id.String() {
		t.Fatalf("a stock movement is about %+v, want its stock line", e.Entity)
	}
}
