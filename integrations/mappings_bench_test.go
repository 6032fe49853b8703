package integrations

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/script"
)

// erpExample is the ERP example of docs/mappings.md: its post and its
// mapping, as written there.
func erpExample(tb testing.TB) (post, mapping string) {
	tb.Helper()
	raw, err := os.ReadFile("../docs/mappings.md")
	if err != nil {
		tb.Fatal(err)
	}
	fence := regexp.MustCompile("(?ms)^```[a-z]+ example=erp ([a-z]+)\n(.*?)^```")
	blocks := map[string]string{}
	for _, m := range fence.FindAllStringSubmatch(string(raw), -1) {
		blocks[m[1]] = m[2]
	}
	if blocks["post"] == "" || blocks["mapping"] == "" {
		tb.Fatal("docs/mappings.md has no ERP example")
	}
	return blocks["post"], blocks["mapping"]
}

// BenchmarkMapPost is the mapping stage of one post (mapBody once the
// program is compiled and cached): the docs' ERP mapping run on the docs'
// ERP post, with the headers a receipt keeps, on a reused engine. Run with
// -benchmem: allocs/op are the Go allocations of a run (the engine's own
// memory is QuickJS's, outside the Go heap).
func BenchmarkMapPost(b *testing.B) {
	post, source := erpExample(b)
	s := newScripts(script.NewRunner(script.DefaultLimits, script.DefaultSlots()))
	defer s.Runner.Close()
	prog, err := s.Compile(source)
	if err != nil {
		b.Fatal(err)
	}
	headers := map[string]string{"Content-Type": "application/json", "User-Agent": "erp/7.2", "Content-Length": "160"}
	received := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		run, err := s.mapPost(ctx, prog, db.Endpoint{}, []byte(post), headers, received)
		if err != nil || run.result != MappingMapped {
			b.Fatalf("%+v %v", run, err)
		}
	}
}
