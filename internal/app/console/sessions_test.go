package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// csrfOf is the CSRF token on a page.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token on the page")
	}
	return m[1]
}

// A session unused for an hour is over, though within its twelve hours;
// one used within the hour goes on, and its use is written at most once a
// minute.
func TestASessionEndsAfterAnHourIdle(t *testing.T) {
	f := newFixture(t)
	b, _ := f.signIn("member@acme.example")
	ctx := context.Background()
	var lastSeen time.Time
	if err := f.d.Pool().QueryRow(ctx, `SELECT last_seen_at FROM console_sessions`).Scan(&lastSeen); err != nil {
		t.Fatal(err)
	}
	b.get("/console/receipts")
	var again time.Time
	if err := f.d.Pool().QueryRow(ctx, `SELECT last_seen_at FROM console_sessions`).Scan(&again); err != nil || !again.Equal(lastSeen) {
		t.Fatalf("a use within the minute wrote last_seen_at: %v -> %v (%v)", lastSeen, again, err)
	}
	// Used 59 minutes ago: still on, and the use is noted.
	if _, err := f.d.Pool().Exec(ctx, `UPDATE console_sessions SET last_seen_at = now() - interval '59 minutes'`); err != nil {
		t.Fatal(err)
	}
	if status, _ := b.get("/console/receipts"); status != http.StatusOK {
		t.Fatalf("a session used 59 minutes ago: %d", status)
	}
	if err := f.d.Pool().QueryRow(ctx, `SELECT last_seen_at FROM console_sessions`).Scan(&again); err != nil || time.Since(again) > time.Minute {
		t.Fatalf("the use was not noted: %v %v", again, err)
	}
	if _, err := f.d.Pool().Exec(ctx, `UPDATE console_sessions SET last_seen_at = now() - interval '61 minutes'`); err != nil {
		t.Fatal(err)
	}
	if status, page := b.get("/console/receipts"); status != http.StatusUnauthorized || !strings.Contains(page, "session is over") {
		t.Fatalf("a session idle for an hour: %d", status)
	}
}

// A user lists their own sessions and ends one; a member cannot end
// another's; the owner sees everyone's and ends anyone's.
func TestUsersEndTheirSessionsAndTheOwnerEndsAnyones(t *testing.T) {
	f := newFixture(t)
	member1, _ := f.signIn("member@acme.example")
	member2, _ := f.signIn("member@acme.example")
	owner, _ := f.signIn("owner@acme.example")
	status, page := member1.get("/console/sessions")
	if status != http.StatusOK || strings.Count(page, `action="/console/sessions/`) != 2 || strings.Contains(page, "owner@acme.example signed in") {
		t.Fatalf("the member's sessions page: %d %s", status, page)
	}
	var memberIDs, ownerIDs []string
	rows, _ := f.d.Pool().Query(context.Background(), `SELECT s.id::text, u.email FROM console_sessions s JOIN users u ON u.id = s.user_id ORDER BY s.created_at`)
	for rows.Next() {
		var id, email string
		_ = rows.Scan(&id, &email)
		if email == "owner@acme.example" {
			ownerIDs = append(ownerIDs, id)
		} else {
			memberIDs = append(memberIDs, id)
		}
	}
	rows.Close()
	csrf := csrfOf(t, page)
	// The member ends their second session from the first.
	if status, page := member1.post("/console/sessions/"+memberIDs[1]+"/end", url.Values{"csrf": {csrf}}); status != http.StatusOK ||
		!strings.Contains(page, "Ended a session of member@acme.example") {
		t.Fatalf("ending one's own session: %d %s", status, page)
	}
	if status, _ := member2.get("/console/receipts"); status != http.StatusUnauthorized {
		t.Fatalf("the ended session still opens pages: %d", status)
	}
	// Not the owner's.
	if status, _ := member1.post("/console/sessions/"+ownerIDs[0]+"/end", url.Values{"csrf": {csrf}}); status != http.StatusNotFound {
		t.Fatalf("a member ending the owner's session: %d", status)
	}
	status, page = owner.get("/console/sessions")
	if status != http.StatusOK || !strings.Contains(page, "member@acme.example") || !strings.Contains(page, "Everyone") {
		t.Fatalf("the owner's sessions page: %d %s", status, page)
	}
	if status, _ := owner.post("/console/sessions/"+memberIDs[0]+"/end", url.Values{"csrf": {csrfOf(t, page)}}); status != http.StatusOK {
		t.Fatalf("the owner ending the member's session: %d", status)
	}
	if status, _ := member1.get("/console/receipts"); status != http.StatusUnauthorized {
		t.Fatalf("the session the owner ended still opens pages: %d", status)
	}
	var audited int
	if err := f.d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'console.session_end'`).Scan(&audited); err != nil || audited != 2 {
		t.Fatalf("session ends audited: %d %v", audited, err)
	}
}

// Disabling a user ends all their sessions at once and refuses their
// sign-in links; enabled again, they sign in with a new link.
func TestDisablingAUserEndsAllTheirSessions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	b1, _ := f.signIn("member@acme.example")
	b2, _ := f.signIn("member@acme.example")
	unused, err := f.d.CreateConsoleLink(ctx, f.org.ID, "member@acme.example")
	if err != nil {
		t.Fatal(err)
	}
	ended, err := f.d.SetUserDisabled(ctx, f.org.ID, "member@acme.example", true)
	if err != nil || ended != 2 {
		t.Fatalf("disable: %d %v", ended, err)
	}
	for _, b := range []*browser{b1, b2} {
		if status, _ := b.get("/console/receipts"); status != http.StatusUnauthorized {
			t.Fatalf("a disabled user's session: %d", status)
		}
	}
	if _, _, err := f.d.StartConsoleSession(ctx, unused); err == nil {
		t.Fatal("a link made before the user was disabled signed in")
	}
	if _, err := f.d.CreateConsoleLink(ctx, f.org.ID, "member@acme.example"); err == nil {
		t.Fatal("a link was made for a disabled user")
	}
	if _, err := f.d.SetUserDisabled(ctx, f.org.ID, "member@acme.example", false); err != nil {
		t.Fatal(err)
	}
	f.signIn("member@acme.example")
	var n int
	if err := f.d.Pool().QueryRow(ctx, `SELECT count(*) FROM console_sessions`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("sessions after enabling: %d %v", n, err)
	}
}
