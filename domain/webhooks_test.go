package domain

import (
	"testing"
	"time"
)

func TestNextNightly(t *testing.T) {
	for _, c := range []struct{ now, want string }{
		{"2026-11-22T01:59:00Z", "2026-11-22T02:00:00Z"},
		{"2026-11-22T02:00:00Z", "2026-11-23T02:00:00Z"},
		{"2026-11-22T23:00:00Z", "2026-11-23T02:00:00Z"},
		{"2026-12-31T10:00:00Z", "2027-01-01T02:00:00Z"},
		{"2026-11-22T03:00:00+02:00", "2026-11-22T02:00:00Z"}, // 01:00 UTC
	} {
		now, _ := time.Parse(time.RFC3339, c.now)
		want, _ := time.Parse(time.RFC3339, c.want)
		if got := NextNightly(now, 2*time.Hour); !got.Equal(want) {
			t.Errorf("after %s: %s, want %s", c.now, got, want)
		}
	}
}
