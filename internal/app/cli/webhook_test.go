package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/internal/testdb"
)

func TestWebhookSubscriptionsThroughTheCLI(t *testing.T) {
	t.Setenv("COMMERCE_SECRET_KEY", strings.Repeat("cd", 32))
	t.Setenv("COMMERCE_ALLOW_PRIVATE_TARGETS", "")
	d := testdb.New(t)
	_, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--json")
	var org struct{ ID string }
	mustJSON(t, out, &org)

	code, out, errOut := run(t, d.URL, "webhook", "add", "--org", org.ID, "--url", "https://8.8.8.8/hooks", "--events", "order.status_changed,customer.created", "--json")
	if code != 0 {
		t.Fatalf("webhook add: %d %s", code, errOut)
	}
	var sub struct {
		ID     string   `json:"id"`
		URL    string   `json:"url"`
		Events []string `json:"events"`
		Secret string   `json:"secret"`
	}
	mustJSON(t, out, &sub)
	if sub.ID == "" || sub.URL != "https://8.8.8.8/hooks" || len(sub.Events) != 2 || !strings.HasPrefix(sub.Secret, "whsec_") || len(sub.Secret) != 50 {
		t.Fatalf("webhook add JSON: %s", out)
	}
	var stored int
	_ = d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM webhook_subscriptions WHERE position($1::bytea IN secret_sealed) > 0`, []byte(sub.Secret)).Scan(&stored)
	if stored != 0 {
		t.Fatal("the secret is stored in the clear")
	}
	if code, _, _ := run(t, d.URL, "webhook", "add", "--org", org.ID, "--url", "https://8.8.4.4/all"); code != 0 {
		t.Fatal("a subscription to every event")
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--url", "http://127.0.0.1:9000/hooks"}, "loopback"},
		{[]string{"--url", "http://localhost/hooks"}, "loopback"},
		{[]string{"--url", "http://192.168.0.10/hooks"}, "private"},
		{[]string{"--url", "http://169.254.169.254/latest"}, "link-local"},
		{[]string{"--url", "ftp://example.com/x"}, "http"},
		{[]string{"--url", "https://8.8.8.8/h", "--events", "order.teleported"}, "unknown event type"},
	} {
		args := append([]string{"webhook", "add", "--org", org.ID}, c.args...)
		if code, _, errOut := run(t, d.URL, args...); code == 0 || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, %q", c.args, code, errOut)
		}
	}
	// Allowed when configured so (as in development).
	if code, _, errOut := run(t, d.URL, "webhook", "add", "--org", org.ID, "--url", "http://127.0.0.1:9000/hooks", "--allow-private-targets"); code != 0 {
		t.Fatalf("loopback allowed: %s", errOut)
	}

	code, out, _ = run(t, d.URL, "webhook", "list", "--org", org.ID, "--json")
	var list []map[string]any
	mustJSON(t, out, &list)
	if code != 0 || len(list) != 3 || strings.Contains(out, sub.Secret) || strings.Contains(out, "secret") {
		t.Fatalf("webhook list: %s", out)
	}
	for step, want := range map[string]bool{"disable": false, "enable": true} {
		code, out, _ := run(t, d.URL, "webhook", step, sub.ID, "--json")
		var s map[string]any
		mustJSON(t, out, &s)
		if code != 0 || s["active"] != want {
			t.Fatalf("webhook %s: %s", step, out)
		}
	}
	// Delivery settings: flags given change, others stay; "none" lifts the
	// rate; a value out of range is refused.
	code, out, errOut = run(t, d.URL, "webhook", "settings", sub.ID, "--rate", "5", "--max-in-flight", "2", "--json")
	var set map[string]any
	mustJSON(t, out, &set)
	if code != 0 || set["rate_limit_per_second"] != 5.0 || set["max_in_flight"] != 2.0 || set["ordering"] != "none" || set["state"] != "healthy" {
		t.Fatalf("webhook settings: %d %s %s", code, out, errOut)
	}
	code, out, _ = run(t, d.URL, "webhook", "settings", sub.ID, "--rate", "none", "--ordering", "per_entity")
	words := strings.Join(strings.Fields(out), " ")
	if code != 0 || !strings.Contains(words, "rate limit none max in flight 2 ordering per_entity state healthy backlog 0 pending, 0 failed, 0 held") {
		t.Fatalf("webhook settings, table: %d %s", code, out)
	}
	if code, _, errOut := run(t, d.URL, "webhook", "settings", sub.ID, "--max-in-flight", "101"); code == 0 || !strings.Contains(errOut, "max_in_flight must be 1 to 100") {
		t.Fatalf("max-in-flight 101: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, d.URL, "webhook", "disable", uuid.NewString()); code == 0 || !strings.Contains(errOut, "not found") {
		t.Fatalf("disable unknown: %d %s", code, errOut)
	}
	code, out, _ = run(t, d.URL, "webhook", "deliveries", "--org", org.ID, "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("no deliveries yet: %s", out)
	}
	if code, _, errOut := run(t, d.URL, "webhook", "deliveries", "--org", org.ID, "--status", "lost"); code == 0 || !strings.Contains(errOut, "unknown delivery status") {
		t.Fatalf("bad status: %d %s", code, errOut)
	}
}
