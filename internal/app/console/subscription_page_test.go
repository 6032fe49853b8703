package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	guuid "github.com/google/uuid"

	"github.com/commerce-integration/commerce/internal/secrets"
)

// seedSubscriptionPage makes sub failing with a probe due, gives it a held
// delivery, and attempts: this hour two that succeeded (100 and 300 ms)
// and one that failed (200 ms), three hours ago one that failed (900 ms),
// and one of a delivery created three days ago (not counted).
func (f *fixture) seedSubscriptionPage(sub guuid.UUID) (held string) {
	f.t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	if _, err := f.d.Pool().Exec(ctx, `UPDATE webhook_subscriptions SET failing_since = now() - interval '2 hours',
		consecutive_failures = 7, last_failure_status = 503, probe_at = $3, probe_interval_seconds = 240
		WHERE org_id = $1 AND id = $2`, f.org.ID, sub, now.Add(90*time.Second)); err != nil {
		f.t.Fatal(err)
	}
	type attempt struct {
		ago    time.Duration
		status int
		ms     int
	}
	delivery := func(status string, created time.Time, attempts ...attempt) string {
		var id string
		if err := f.d.Pool().QueryRow(ctx, `
			WITH e AS (INSERT INTO events (id, org_id, type, data) VALUES (gen_random_uuid(), $1, 'order.confirmed', '{}') RETURNING id)
			INSERT INTO webhook_deliveries (id, org_id, event_id, subscription_id, status, attempts, created_at)
			SELECT gen_random_uuid(), $1, e.id, $2, $3, $4, $5 FROM e RETURNING id::text`,
			f.org.ID, sub, status, len(attempts), created).Scan(&id); err != nil {
			f.t.Fatal(err)
		}
		for i, a := range attempts {
			if _, err := f.d.Pool().Exec(ctx, `INSERT INTO webhook_attempts (id, org_id, delivery_id, attempt, started_at, duration_ms, status_code)
				VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6)`, f.org.ID, id, i+1, now.Add(-a.ago), a.ms, a.status); err != nil {
				f.t.Fatal(err)
			}
		}
		return id
	}
	hourStart := now.Truncate(time.Hour)
	sinceHour := now.Sub(hourStart)
	delivery("succeeded", hourStart, attempt{sinceHour / 2, 200, 100})
	delivery("succeeded", hourStart, attempt{sinceHour / 3, 503, 200}, attempt{sinceHour / 4, 204, 300})
	delivery("exhausted", hourStart.Add(-3*time.Hour), attempt{3*time.Hour - time.Minute, 500, 900})
	delivery("succeeded", now.Add(-72*time.Hour), attempt{sinceHour / 5, 200, 5000})
	return delivery("held", now)
}

// A subscription's page says its state and why, its last 24 hours per hour
// (a chart with a title and description, and the figures as a table),
// its backlog linked to the lists, its held deliveries with when the next
// probe is due, its settings and where its secret rotation stands, never
// a secret.
func TestSubscriptionPageShowsStateFiguresBacklogAndRotation(t *testing.T) {
	f := newFixture(t)
	sub := f.subscription()
	held := f.seedSubscriptionPage(sub.ID)
	sealer, _ := secrets.NewSealer(make([]byte, 32))
	rotated, err := f.d.RotateSubscriptionSecret(context.Background(), sealer, f.org.ID, sub.ID)
	if err != nil {
		t.Fatal(err)
	}
	member, _ := f.signIn("member@acme.example")
	status, page := member.get("/console/webhooks/" + sub.ID.String())
	if status != 200 {
		t.Fatalf("the subscription's page: %d %s", status, page)
	}
	for _, want := range []string{
		`<strong class="badge failing">failing</strong>`, "7 failed attempts in a row; the last got 503", "the next probe is due",
		"4 attempts, 2 succeeded (a 2xx answer)",
		`<title id="rate-title">Success rate per hour</title>`, `<desc id="ms-desc">`, "the tallest bar 900 ms",
		"<td>67% of 3</td><td>200 ms</td>", "<td>0% of 1</td><td>900 ms</td>",
		`href="/console/deliveries?subscription=` + sub.ID.String() + `&amp;status=held">1 held</a>`,
		`href="/console/deliveries?subscription=` + sub.ID.String() + `&amp;status=exhausted">1 exhausted</a>`,
		`href="/console/deliveries/` + held + `"`, "the one after 4 min 0 s later if it fails",
		"no rate limit", "the one it replaced is still accepted beside it until",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the subscription's page lacks %s", want)
		}
	}
	if strings.Contains(page, rotated.Secret) || strings.Contains(page, "5000 ms") || strings.Contains(page, "5 s") {
		t.Errorf("the page shows the secret, or counts an attempt of a delivery made three days ago")
	}
	if status, _ := member.get("/console/webhooks/" + guuid.NewString()); status != http.StatusNotFound {
		t.Errorf("an unknown subscription: %d", status)
	}
	if _, page := member.get("/console/webhooks"); !strings.Contains(page, `href="/console/webhooks/`+sub.ID.String()+`"`) {
		t.Errorf("the subscriptions list does not link to the subscription's page")
	}
}
