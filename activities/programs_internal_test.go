package activities

import (
	"strconv"
	"testing"

	"github.com/commerce-integration/commerce/internal/script"
)

// The worker's compiled transformations are bounded: past programCacheSize
// the least recently used is dropped, and one used again stays.
func TestCompiledTransformationsAreBounded(t *testing.T) {
	var c programs
	c.put(&script.Program{SHA256: "kept"})
	for i := range 3 * programCacheSize {
		c.put(&script.Program{SHA256: strconv.Itoa(i)})
		c.get("kept") // used at every step: never the least recent
	}
	if len(c.bySum) != programCacheSize || c.order.Len() != programCacheSize || programCacheSize != 256 {
		t.Fatalf("%d programs kept (list %d), want %d", len(c.bySum), c.order.Len(), 256)
	}
	if c.get("kept") == nil {
		t.Error("the program used at every step was dropped")
	}
	if c.get("0") != nil {
		t.Error("the least recently used program was kept")
	}
	if c.get(strconv.Itoa(3*programCacheSize-1)) == nil {
		t.Error("the last program put was dropped")
	}
}
