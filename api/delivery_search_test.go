package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Deliveries are found by what support knows: a reference of the receipt
// whose effect emitted the event (in any case, or the receipt's id), the
// event, the delivery's id and when it was created. A filter no delivery
// can match is a 400 that names it.
func TestDeliveriesAreFoundByReferenceEventIDAndTime(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ours := f.managedRecords(t, f.org.ID)
	// The delivered event is the receipt's: as if its effect emitted it.
	if _, err := f.db.Pool().Exec(ctx, `UPDATE events SET receipt_id = $2 WHERE org_id = $1 AND id = $3`, f.org.ID, ours.receipt, ours.event); err != nil {
		t.Fatal(err)
	}
	list := func(q url.Values) []uuid.UUID {
		t.Helper()
		status, _, body := f.do("GET", "/api/v1/webhooks/deliveries?"+q.Encode(), f.key, nil)
		var page struct {
			Deliveries []struct {
				ID uuid.UUID `json:"id"`
			} `json:"deliveries"`
		}
		if err := json.Unmarshal(body, &page); status != 200 || err != nil {
			t.Fatalf("%s: %d %s", q.Encode(), status, body)
		}
		ids := []uuid.UUID{}
		for _, d := range page.Deliveries {
			ids = append(ids, d.ID)
		}
		return ids
	}
	now := time.Now().UTC()
	for _, c := range []struct {
		q    url.Values
		want bool
	}{
		{url.Values{"ref": {"SO-9"}}, true},
		{url.Values{"ref": {"so-9"}}, true},
		{url.Values{"ref": {ours.receipt.String()}}, true},
		{url.Values{"ref": {"SO-404"}}, false},
		{url.Values{"event_id": {ours.event.String()}}, true},
		{url.Values{"event_id": {uuid.NewString()}}, false},
		{url.Values{"id": {ours.delivery.String()}}, true},
		{url.Values{"id": {uuid.NewString()}}, false},
		{url.Values{"created_after": {now.Add(-time.Hour).Format(time.RFC3339)}, "created_before": {now.Add(time.Hour).Format(time.RFC3339)}}, true},
		{url.Values{"created_after": {now.Add(time.Hour).Format(time.RFC3339)}}, false},
		{url.Values{"ref": {"SO-9"}, "id": {ours.delivery.String()}, "event_id": {ours.event.String()}}, true},
	} {
		ids := list(c.q)
		found := len(ids) == 1 && ids[0] == ours.delivery
		if found != c.want || (!c.want && len(ids) != 0) {
			t.Errorf("%s: %v, want the delivery: %v", c.q.Encode(), ids, c.want)
		}
	}
	for q, want := range map[string]string{
		"id=not-a-uuid":       "id",
		"event_id=not-a-uuid": "event_id",
		"created_after=2026-11-02T10:00:00Z&created_before=2026-11-01T10:00:00Z": "created_before (2026-11-01T10:00:00Z) is not later than created_after (2026-11-02T10:00:00Z)",
	} {
		status, _, body := f.do("GET", "/api/v1/webhooks/deliveries?"+q, f.key, nil)
		if status != 400 || !strings.Contains(string(body), want) {
			t.Errorf("%s: %d %s, want 400 naming %s", q, status, body, want)
		}
	}
}
