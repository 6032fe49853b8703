package domain

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestExtractRefsFindsTheBusinessReferencesInOrder(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"delivery status", `{"delivery_ref":"DL-1","consignment_ref":"CN 9","order_ref":"SO-2026-0202","status":"shipped"}`,
			[]string{"DL-1", "CN 9", "SO-2026-0202"}},
		{"invoice", `{"order_ref":"SO-1","invoice_ref":"INV-7","amount_minor":100}`, []string{"SO-1", "INV-7"}},
		{"supplier invoice", `{"po_number":"PO-3","invoice_ref":"SI-3","invoiced_qty":{"total":2}}`, []string{"PO-3", "SI-3"}},
		{"customers nested in an array", `{"customers":[{"external_id":"C-1","company":"A"},{"external_id":"C-2"}]}`, []string{"C-1", "C-2"}},
		{"same reference twice, other case", `{"order_ref":"SO-1","quote_ref":"so-1"}`, []string{"SO-1"}},
		{"not a reference field", `{"status":"SO-1","text":"order_ref"}`, nil},
		{"numbers and nulls are not references", `{"order_ref":12,"quote_ref":null,"invoice_ref":"  "}`, nil},
		{"not JSON", `order_ref=SO-1`, nil},
		{"cut off part-way", `{"order_ref":"SO-1","invoice_ref":"IN`, []string{"SO-1"}},
		{"a key named like a value", `{"text":"order_ref","order_ref":"SO-9"}`, []string{"SO-9"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ExtractRefs([]byte(c.body)); !slices.Equal(got, c.want) {
				t.Fatalf("ExtractRefs(%s) = %q, want %q", c.body, got, c.want)
			}
		})
	}
}

func TestExtractRefsKeepsAtMostFiftyAndSkipsOverlongValues(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"customers":[`)
	b.WriteString(`{"external_id":"` + strings.Repeat("x", MaxRefLength+1) + `"}`)
	for i := range 80 {
		fmt.Fprintf(&b, `,{"external_id":"C-%d"}`, i)
	}
	b.WriteString(`]}`)
	got := ExtractRefs([]byte(b.String()))
	if len(got) != MaxRefs || got[0] != "C-0" || got[MaxRefs-1] != fmt.Sprintf("C-%d", MaxRefs-1) {
		t.Fatalf("got %d refs, first %q, last %q; want %d from C-0", len(got), got[0], got[len(got)-1], MaxRefs)
	}
}

func TestRefKeysAreLowerCaseAndDistinct(t *testing.T) {
	if got := RefKeys([]string{"SO-1", " so-1 ", "INV-2"}); !slices.Equal(got, []string{"so-1", "inv-2"}) {
		t.Fatalf("RefKeys = %q", got)
	}
}

// BenchmarkExtractRefs reads the references of a typical delivery post and
// of a 500-customer sync.
func BenchmarkExtractRefs(b *testing.B) {
	small := []byte(`{"delivery_ref":"DL-1","consignment_ref":"CN 9","order_ref":"SO-2026-0202","status":"shipped","tracking_url":"https://t.example/1"}`)
	var sb strings.Builder
	sb.WriteString(`{"customers":[`)
	for i := range 500 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"external_id":"C-%d","company":"Company %d","email":"c%d@example.com","vat_number":"GB%09d"}`, i, i, i, i)
	}
	sb.WriteString(`]}`)
	large := []byte(sb.String())
	b.Run("delivery", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ExtractRefs(small)
		}
	})
	b.Run("customers500", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ExtractRefs(large)
		}
	})
}
