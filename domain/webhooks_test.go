package domain

import (
	"testing"
	"time"

	"github.com/google/uuid"
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

// Each delivery has its own retry time in the hour after the nightly run,
// the same every time it is asked, and deliveries spread over that hour.
func TestNextNightlyForSpreadsDeliveriesOverTheHour(t *testing.T) {
	now, _ := time.Parse(time.RFC3339, "2026-11-22T10:00:00Z")
	run, _ := time.Parse(time.RFC3339, "2026-11-23T02:00:00Z")
	quarters := map[time.Duration]int{}
	for i := range 400 {
		id := uuid.NewSHA1(uuid.NameSpaceOID, []byte{byte(i), byte(i >> 8)})
		got := NextNightlyFor(now, 2*time.Hour, id)
		if got.Before(run) || !got.Before(run.Add(NightlySpread)) {
			t.Fatalf("delivery %s retried at %s, outside [%s, +%s)", id, got, run, NightlySpread)
		}
		if again := NextNightlyFor(now, 2*time.Hour, id); !again.Equal(got) {
			t.Fatalf("delivery %s: %s, then %s", id, got, again)
		}
		quarters[got.Sub(run)/(15*time.Minute)]++
	}
	for q := range time.Duration(4) {
		if quarters[q] < 50 {
			t.Errorf("quarter %d of the hour has %d of 400 deliveries: %v", q, quarters[q], quarters)
		}
	}
	// A run late in the day wraps past midnight to the first such time.
	id := uuid.MustParse("0192f0c4-7c1e-7a4b-9d2e-3f5a6b7c8d9e")
	at := 23*time.Hour + 30*time.Minute
	slot := (at + NightlyOffset(id)) % (24 * time.Hour)
	if got := NextNightlyFor(now, at, id); !got.Equal(NextNightly(now, slot)) || got.Sub(now) > 24*time.Hour {
		t.Errorf("late run: %s", got)
	}
}
