package domain

import (
	"strings"
	"testing"
)

// Indexed text has a maximum in characters (not bytes), checked before the
// storage sees it.
func TestProductCategoryIsAtMost200Characters(t *testing.T) {
	for n, ok := range map[int]bool{MaxCategory: true, MaxCategory + 1: false, 3000: false} {
		c := strings.Repeat("é", n)
		p := ProductInput{SKU: "A", Title: "t", Category: &c}
		if err := p.Normalize("GBP"); (err == nil) != ok || (err != nil && !strings.Contains(err.Error(), "category")) {
			t.Errorf("a category of %d characters: %v", n, err)
		}
	}
}
