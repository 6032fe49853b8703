package cli_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

func TestEndpointLifecycleThroughTheCLI(t *testing.T) {
	t.Setenv("COMMERCE_SECRET_KEY", strings.Repeat("ab", 32))
	t.Setenv("COMMERCE_BASE_URL", "https://commerce.example")
	d := testdb.New(t)
	_, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--owner-email", "owner@acme.example", "--json")
	var org struct{ ID string }
	mustJSON(t, out, &org)
	for _, u := range [][]string{{"admin@acme.example", "admin"}, {"member@acme.example", "member"}} {
		if code, _, errOut := run(t, d.URL, "user", "add", "--org", org.ID, "--email", u[0], "--role", u[1]); code != 0 {
			t.Fatalf("user add: %s", errOut)
		}
	}

	create := func(as string, extra ...string) (int, map[string]any, string) {
		args := append([]string{"endpoint", "create", "--org", org.ID, "--as", as, "--name", "ERP", "--action", "erp_order_status", "--json"}, extra...)
		code, out, errOut := run(t, d.URL, args...)
		var e map[string]any
		if code == 0 {
			mustJSON(t, out, &e)
		}
		return code, e, errOut
	}
	code, signed, errOut := create("admin@acme.example", "--require-signature")
	if code != 0 {
		t.Fatalf("endpoint create exited %d: %s", code, errOut)
	}
	url, _ := signed["url"].(string)
	secret, _ := signed["secret"].(string)
	if !strings.HasPrefix(url, "https://commerce.example/api/in/in_") || !strings.HasPrefix(secret, "whsec_") ||
		signed["require_signature"] != true || signed["active"] != true || signed["action"] != "erp_order_status" {
		t.Fatalf("endpoint create JSON: %v", signed)
	}
	token := strings.TrimPrefix(url, "https://commerce.example/api/in/")
	code, plain, _ := create("owner@acme.example")
	if code != 0 || plain["secret"] != nil {
		t.Fatalf("unsigned endpoint by the owner: %d %v", code, plain)
	}
	// A member may not create endpoints; nor may a stranger.
	for as, msg := range map[string]string{"member@acme.example": "needs the admin or owner role", "nobody@acme.example": "not a user"} {
		if code, _, errOut := create(as); code == 0 || !strings.Contains(errOut, msg) {
			t.Errorf("--as %s: exit %d, %q", as, code, errOut)
		}
	}
	if code, _, errOut := run(t, d.URL, "endpoint", "create", "--org", org.ID, "--as", "admin@acme.example", "--name", "x", "--action", "teleport"); code == 0 || !strings.Contains(errOut, "action") {
		t.Errorf("unknown action: exit %d, %q", code, errOut)
	}

	// The token is stored as its SHA-256, the secret sealed.
	var hashed, secretStored int
	_ = d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM inbound_endpoints WHERE token_hash = $1`, secrets.Hash(token)).Scan(&hashed)
	_ = d.Pool().QueryRow(context.Background(), `SELECT count(*) FROM inbound_endpoints WHERE position($1::bytea IN secret_sealed) > 0`, []byte(secret)).Scan(&secretStored)
	if hashed != 1 || secretStored != 0 {
		t.Fatalf("token stored as its hash: %d rows; secret in the clear: %d rows", hashed, secretStored)
	}
	if p, err := d.PostToEndpoint(context.Background(), secrets.Hash(token)); err != nil || p.Endpoint.ID.String() != signed["id"] {
		t.Fatalf("the printed URL does not reach the endpoint: %v", err)
	}

	id := signed["id"].(string)
	for _, step := range []struct{ cmd, state string }{{"pause", "paused"}, {"resume", "active"}, {"delete", "deleted"}} {
		code, out, errOut := run(t, d.URL, "endpoint", step.cmd, id, "--json")
		var e map[string]any
		if code == 0 {
			mustJSON(t, out, &e)
		}
		if code != 0 || e["state"] != step.state {
			t.Fatalf("endpoint %s: exit %d %s %s", step.cmd, code, out, errOut)
		}
	}
	if code, _, errOut := run(t, d.URL, "endpoint", "resume", id); code == 0 || !strings.Contains(errOut, "deleted") {
		t.Errorf("resuming a deleted endpoint: exit %d, %q", code, errOut)
	}
	if _, err := d.PostToEndpoint(context.Background(), secrets.Hash(token)); err == nil {
		t.Fatal("a deleted endpoint's token still finds it")
	}
	code, out, _ = run(t, d.URL, "endpoint", "list", "--org", org.ID, "--json")
	var list []map[string]any
	mustJSON(t, out, &list)
	if code != 0 || len(list) != 2 || strings.Contains(out, token) || strings.Contains(out, secret) {
		t.Fatalf("endpoint list: %d %s", code, out)
	}
}

func TestReceiptsListAndShowThroughTheCLI(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	store := func(body string, status int, outcome domain.Outcome, at time.Time) uuid.UUID {
		id, err := d.StoreReceipt(ctx, db.NewReceipt{OrgID: org.ID, EndpointID: e.ID, Action: e.Action, ReceivedAt: at,
			Body: []byte(body), Size: len(body), BodyComplete: true})
		if err != nil {
			t.Fatal(err)
		}
		msg := "order SO-9 not found"
		if err := d.UpdateReceipt(ctx, org.ID, id, db.ReceiptUpdate{Outcome: outcome, Error: &msg, Status: status, Response: []byte(`{"error": "x"}`)}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	now := time.Now()
	failed := store(`{"order_ref": "SO-9", "status": "open"}`, 422, domain.OutcomeFailed, now.Add(-time.Minute))
	newest := store(`not json`, 400, domain.OutcomeFailed, now)
	_ = store(`{"order_ref": "SO-1", "status": "open"}`, 200, domain.OutcomeApplied, now.Add(-2*time.Minute))

	code, out, errOut := run(t, d.URL, "receipts", "list", "--endpoint", e.ID.String(), "--json")
	var list []map[string]any
	if code != 0 {
		t.Fatalf("receipts list: %s", errOut)
	}
	mustJSON(t, out, &list)
	if len(list) != 3 || list[0]["id"] != newest.String() || list[1]["id"] != failed.String() {
		t.Fatalf("receipts list is not newest first: %s", out)
	}
	for _, field := range []string{"id", "endpoint_id", "action", "received_at", "status_code", "outcome", "replay_of", "workflow_id", "error"} {
		if _, ok := list[0][field]; !ok {
			t.Errorf("receipts list entry has no %q", field)
		}
	}
	_, out, _ = run(t, d.URL, "receipts", "list", "--endpoint", e.ID.String(), "--status", "applied", "--limit", "5", "--json")
	mustJSON(t, out, &list)
	if len(list) != 1 || list[0]["outcome"] != "applied" {
		t.Fatalf("--status applied: %s", out)
	}
	_, out, _ = run(t, d.URL, "receipts", "list", "--endpoint", e.ID.String(), "--status", "failed,error", "--limit", "1", "--json")
	mustJSON(t, out, &list)
	if len(list) != 1 || list[0]["id"] != newest.String() {
		t.Fatalf("--status failed,error --limit 1: %s", out)
	}
	// --ref: a reference in any case, and the table shows each row's.
	_, out, _ = run(t, d.URL, "receipts", "list", "--endpoint", e.ID.String(), "--ref", "so-9", "--json")
	mustJSON(t, out, &list)
	if len(list) != 1 || list[0]["id"] != failed.String() {
		t.Fatalf("--ref so-9: %s", out)
	}
	if code, out, _ := run(t, d.URL, "receipts", "list", "--endpoint", e.ID.String(), "--ref", failed.String()); code != 0 ||
		!strings.Contains(out, failed.String()) || !strings.Contains(out, " SO-9 ") || strings.Contains(out, newest.String()) {
		t.Fatalf("--ref by receipt id (table): %s", out)
	}
	code, out, _ = run(t, d.URL, "receipts", "show", failed.String(), "--json")
	var shown map[string]any
	mustJSON(t, out, &shown)
	if code != 0 || shown["status_code"] != 422.0 || shown["response"] == nil || shown["error"] != "order SO-9 not found" {
		t.Fatalf("receipts show: %s", out)
	}
	if code, out, _ := run(t, d.URL, "receipts", "show", failed.String()); code != 0 || !strings.Contains(out, "order SO-9 not found") {
		t.Fatalf("receipts show (table): %s", out)
	}
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"receipts", "list", "--endpoint", e.ID.String(), "--limit", "0"}, "--limit"},
		{[]string{"receipts", "list", "--endpoint", e.ID.String(), "--status", "lost"}, "lost"},
		{[]string{"receipts", "show", uuid.NewString()}, "not found"},
		{[]string{"receipts", "cancel", failed.String()}, "not parked"},
	} {
		if code, _, errOut := run(t, d.URL, c.args...); code == 0 || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, %q", c.args, code, errOut)
		}
	}
}

func TestOrgTolerancesShowAndChange(t *testing.T) {
	d := testdb.New(t)
	_, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--json")
	var org struct{ ID string }
	mustJSON(t, out, &org)
	var tol struct {
		Qty         float64 `json:"qty"`
		AmountPct   float64 `json:"amount_pct"`
		AmountMinor int64   `json:"amount_minor"`
	}
	code, out, _ := run(t, d.URL, "org", "tolerances", "--org", org.ID, "--json")
	mustJSON(t, out, &tol)
	if code != 0 || tol.Qty != 0 || tol.AmountPct != 1 || tol.AmountMinor != 100 {
		t.Fatalf("default tolerances: %d %s", code, out)
	}
	code, out, _ = run(t, d.URL, "org", "tolerances", "--org", org.ID, "--amount-pct", "2.5", "--json")
	mustJSON(t, out, &tol)
	if code != 0 || tol.Qty != 0 || tol.AmountPct != 2.5 || tol.AmountMinor != 100 {
		t.Fatalf("after --amount-pct 2.5: %d %s", code, out)
	}
	got, err := d.Tolerances(context.Background(), uuid.MustParse(org.ID))
	if err != nil || got.AmountPct != 2.5 {
		t.Fatalf("stored tolerances %+v, %v", got, err)
	}
	if code, _, errOut := run(t, d.URL, "org", "tolerances", "--org", org.ID, "--qty", "-1"); code == 0 || !strings.Contains(errOut, "zero or more") {
		t.Fatalf("negative tolerance: exit %d, %q", code, errOut)
	}
}

// Every replay refusal of docs/design.md#replay through `receipts replay`,
// each with its reason, before Temporal is reached (none answers here) and
// without storing anything. The first case: a
// cancellation posted unsigned to a signed endpoint, refused 401, must not
// cancel the order when replayed.
func TestReplayRefusalsThroughTheCLI(t *testing.T) {
	key := strings.Repeat("cd", 32)
	t.Setenv("COMMERCE_SECRET_KEY", key)
	t.Setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
	d := testdb.New(t)
	ctx := context.Background()
	rawKey, _ := secrets.ParseServiceKey(key)
	sealer, err := secrets.NewSealer(rawKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.New(api.Deps{DB: d.DB, BaseURL: "http://localhost",
		Service: integrations.New(integrations.Deps{DB: d.DB, Sealer: sealer, BaseURL: "http://localhost"})}).Handler())
	defer srv.Close()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	sf, _ := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-9", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 1}]}]}`))
	if _, err := d.Seed(ctx, org.ID, sf); err != nil {
		t.Fatal(err)
	}
	endpoint := func(signed bool) db.CreatedEndpoint {
		e, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP",
			Action: domain.ActionERPOrderStatus, RequireSignature: signed})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	post := func(e db.CreatedEndpoint, body string) (int, string) {
		resp, err := http.Post(srv.URL+"/api/in/"+e.Token, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Header.Get("X-Receipt-Id") == "" {
			t.Fatalf("post kept no receipt: %d", resp.StatusCode)
		}
		return resp.StatusCode, resp.Header.Get("X-Receipt-Id")
	}
	state := func(e db.CreatedEndpoint, cmd string) {
		if code, _, errOut := run(t, d.URL, "endpoint", cmd, e.ID.String()); code != 0 {
			t.Fatalf("endpoint %s: %s", cmd, errOut)
		}
	}
	good := `{"order_ref": "SO-9", "status": "processing"}`

	signed := endpoint(true)
	status, unsignedCancel := post(signed, `{"order_ref":"SO-9","status":"cancelled"}`)
	if status != http.StatusUnauthorized {
		t.Fatalf("unsigned cancellation to a signed endpoint: %d", status)
	}
	plain := endpoint(false)
	_, tooBig := post(plain, `{"order_ref": "`+strings.Repeat("x", domain.MaxInboundBody)+`"}`)
	state(plain, "pause")
	_, whilePaused := post(plain, good)
	state(plain, "resume")
	_, failed := post(plain, good) // 500 here: no workflow service; replayable in itself
	running, err := d.StoreReceipt(ctx, db.NewReceipt{OrgID: org.ID, EndpointID: plain.ID, Action: plain.Action, ReceivedAt: time.Now(),
		Body: []byte(good), Size: len(good), BodyComplete: true, ReplayOf: ptr(uuid.MustParse(failed))})
	if err != nil {
		t.Fatal(err)
	}
	paused := endpoint(false)
	_, onPaused := post(paused, good)
	state(paused, "pause")
	deleted := endpoint(false)
	_, onDeleted := post(deleted, good)
	state(deleted, "delete")

	receipts := func() int {
		var n int
		_ = d.Pool().QueryRow(ctx, `SELECT count(*) FROM inbound_receipts WHERE org_id = $1`, org.ID).Scan(&n)
		return n
	}
	before := receipts()
	for _, c := range []struct{ name, receipt, reason string }{
		{"refused for its signature", unsignedCancel, "it was refused for its signature (401)"},
		{"body over 1 MB", tooBig, "only its start was kept"},
		{"stored while paused", whilePaused, "stored while its endpoint was paused"},
		{"a replay still running", failed, "replay " + running.String() + " of it is still running or parked"},
		{"paused endpoint", onPaused, "is paused: resume it first"},
		{"deleted endpoint", onDeleted, "was deleted"},
		{"unknown receipt", uuid.NewString(), "receipt not found"},
	} {
		code, out, errOut := run(t, d.URL, "receipts", "replay", c.receipt, "--json")
		if code != 1 || out != "" || !strings.Contains(errOut, c.reason) {
			t.Errorf("%s: exit %d, %q %q; want exit 1 saying %q", c.name, code, out, errOut, c.reason)
		}
	}
	var orderStatus string
	_ = d.Pool().QueryRow(ctx, `SELECT status FROM orders WHERE org_id = $1 AND number = 'SO-9'`, org.ID).Scan(&orderStatus)
	if orderStatus != "confirmed" || receipts() != before {
		t.Fatalf("after refused replays: order %s, %d new receipts; want confirmed and none", orderStatus, receipts()-before)
	}
	// Reads of an unknown endpoint's receipts are refused the same way.
	if code, _, errOut := run(t, d.URL, "receipts", "list", "--endpoint", uuid.NewString()); code == 0 || !strings.Contains(errOut, "endpoint not found") {
		t.Fatalf("receipts list of an unknown endpoint: exit %d, %q", code, errOut)
	}
}

func ptr[T any](v T) *T { return &v }
