package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/testdb"
	"github.com/commerce-integration/commerce/internal/version"
)

// run executes the commerce command tree with args against the test
// database and returns its exit code, stdout and stderr.
func run(t *testing.T, dbURL string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := cli.Execute(cli.NewRoot(), append(args, "--database-url", dbURL), &out, &errOut)
	return code, out.String(), errOut.String()
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
}

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	u, _ := testdb.Empty(t)
	var wg sync.WaitGroup
	codes := make([]int, 3)
	outs := make([]string, 3)
	for i := range codes {
		wg.Go(func() { codes[i], outs[i], _ = run(t, u, "migrate", "--json") })
	}
	wg.Wait()
	migrated := 0
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("concurrent migrate %d exited %d", i, c)
		}
		var r struct{ From, To int }
		mustJSON(t, outs[i], &r)
		if r.From != r.To {
			migrated++
		}
	}
	if migrated != 1 {
		t.Fatalf("%d of 3 concurrent runs applied migrations, want exactly 1", migrated)
	}
	code, out, _ := run(t, u, "migrate")
	if code != 0 || !strings.Contains(out, "up to date") {
		t.Fatalf("second migrate: %d %q", code, out)
	}
}

func TestOrgKeyLifecycleThroughTheCLI(t *testing.T) {
	d := testdb.New(t)
	code, out, errOut := run(t, d.URL, "org", "create", "--name", "Acme Ltd", "--owner-email", "owner@acme.example", "--json")
	if code != 0 {
		t.Fatalf("org create exited %d: %s", code, errOut)
	}
	var org struct {
		ID       string  `json:"id"`
		Name     string  `json:"name"`
		Currency string  `json:"currency"`
		OwnerID  *string `json:"owner_id"`
	}
	mustJSON(t, out, &org)
	if org.ID == "" || org.Name != "Acme Ltd" || org.Currency != "GBP" || org.OwnerID == nil {
		t.Fatalf("org create JSON = %s", out)
	}

	code, out, errOut = run(t, d.URL, "key", "create", "--org", org.ID, "--name", "erp", "--scopes", "products:read,quotes:read", "--json")
	if code != 0 {
		t.Fatalf("key create exited %d: %s", code, errOut)
	}
	var key struct {
		ID     string   `json:"id"`
		Key    string   `json:"key"`
		Prefix string   `json:"prefix"`
		Scopes []string `json:"scopes"`
	}
	mustJSON(t, out, &key)
	if !strings.HasPrefix(key.Key, "ck_") || !strings.HasPrefix(key.Key, key.Prefix) || len(key.Scopes) != 2 {
		t.Fatalf("key create JSON = %s", out)
	}

	srv := httptest.NewServer(api.New(api.Deps{DB: d.DB, Cursors: cursor.New(make([]byte, 32))}).Handler())
	defer srv.Close()
	call := func() int {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/products", nil)
		req.Header.Set("Authorization", "Bearer "+key.Key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := call(); s != 200 {
		t.Fatalf("new key answered %d", s)
	}

	code, out, _ = run(t, d.URL, "key", "list", "--org", org.ID, "--json")
	if code != 0 || strings.Contains(out, key.Key) {
		t.Fatalf("key list exited %d or shows the key: %s", code, out)
	}
	var list []map[string]any
	mustJSON(t, out, &list)
	for _, field := range []string{"id", "name", "prefix", "scopes", "created_at", "last_used_at", "revoked_at"} {
		if _, ok := list[0][field]; !ok {
			t.Errorf("key list entry has no %q: %v", field, list[0])
		}
	}
	if list[0]["last_used_at"] == nil {
		t.Errorf("last_used_at not set after a call")
	}

	if code, _, errOut := run(t, d.URL, "key", "revoke", key.ID, "--json"); code != 0 {
		t.Fatalf("key revoke exited %d: %s", code, errOut)
	}
	if s := call(); s != 401 {
		t.Fatalf("revoked key answered %d", s)
	}

	// The database holds no plaintext key: pg_dump of the schema does not
	// contain it (the table scan of the db tests covers machines without pg_dump).
	if pgDump, err := exec.LookPath("pg_dump"); err == nil {
		dump, err := exec.Command(pgDump, "--data-only", "--schema", d.Schema, "--dbname", strings.Split(testdb.ServerURL(), "?")[0]).Output()
		if err != nil {
			t.Fatalf("pg_dump: %v", err)
		}
		if !bytes.Contains(dump, []byte(key.Prefix)) {
			t.Fatal("pg_dump output does not contain the key prefix: the dump is not of this schema")
		}
		if bytes.Contains(dump, []byte(key.Key)) || bytes.Contains(dump, []byte(key.Key[len(key.Prefix):])) {
			t.Fatal("pg_dump output contains the API key")
		}
	}
}

func TestAdminCommandsRefuseBadInput(t *testing.T) {
	d := testdb.New(t)
	_, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--json")
	var org struct{ ID string }
	mustJSON(t, out, &org)
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"org", "create"}, 2, "--name is required"},
		{[]string{"org", "create", "--name", "X", "--currency", "pounds"}, 1, "ISO 4217"},
		{[]string{"org", "addon", "--org", org.ID, "warp", "on"}, 1, "unknown add-on"},
		{[]string{"org", "addon", "--org", org.ID, "stock", "maybe"}, 2, "on or off"},
		{[]string{"org", "addon", "--org", "not-a-uuid", "stock", "on"}, 2, "is not an id"},
		{[]string{"user", "add", "--org", org.ID, "--email", "x@y.example", "--role", "king"}, 1, "role"},
		{[]string{"key", "create", "--org", org.ID, "--name", "k", "--scopes", "products:delete"}, 1, "unknown scope"},
		{[]string{"key", "create", "--org", "01a20000-0000-7000-8000-000000000000", "--name", "k", "--scopes", "all"}, 1, "not found"},
		{[]string{"key", "revoke", "01a20000-0000-7000-8000-000000000000"}, 1, "not found"},
	}
	for _, c := range cases {
		code, _, errOut := run(t, d.URL, c.args...)
		if code != c.code || !strings.Contains(errOut, c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", c.args, code, errOut, c.code, c.msg)
		}
	}
}

func TestSeedWithBrokenFileExitsNonZeroAndWritesNothing(t *testing.T) {
	d := testdb.New(t)
	_, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--json")
	var org struct{ ID string }
	mustJSON(t, out, &org)
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.json")
	// Valid customers and products first, then a quote naming a customer that
	// does not exist: the file must be rejected as a whole.
	if err := os.WriteFile(broken, []byte(`{
		"customers": [{"company": "Good Customer Ltd"}],
		"products": [{"sku": "OK-1", "title": "Fine"}],
		"quotes": [{"number": "Q-1", "customer": "Missing Ltd", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 5}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, d.URL, "seed", "--org", org.ID, "--file", broken)
	if code == 0 || !strings.Contains(errOut, "quotes[0]") {
		t.Fatalf("broken seed exited %d: %s", code, errOut)
	}
	var n int
	if err := d.Pool().QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM customers) + (SELECT count(*) FROM products) + (SELECT count(*) FROM quotes)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("a rejected seed file wrote %d rows", n)
	}

	good := filepath.Join(dir, "good.json")
	_ = os.WriteFile(good, []byte(`{"products": [{"sku": "OK-1", "title": "Fine"}]}`), 0o644)
	code, out, errOut = run(t, d.URL, "seed", "--org", org.ID, "--file", good, "--json")
	var res struct{ Products int }
	if code != 0 {
		t.Fatalf("good seed exited %d: %s", code, errOut)
	}
	mustJSON(t, out, &res)
	if res.Products != 1 {
		t.Fatalf("seed JSON = %s", out)
	}
	if code, _, errOut := run(t, d.URL, "seed", "--org", org.ID, "--file", filepath.Join(dir, "missing.json")); code == 0 || !strings.Contains(errOut, "read seed file") {
		t.Fatalf("missing file: exit %d, %s", code, errOut)
	}
}

func TestCommandsRefuseAnUnmigratedDatabase(t *testing.T) {
	u, _ := testdb.Empty(t)
	code, _, errOut := run(t, u, "org", "create", "--name", "Acme")
	if code != 1 || !strings.Contains(errOut, "commerce migrate") {
		t.Fatalf("exit %d, stderr %q; want a pointer to `commerce migrate`", code, errOut)
	}
}

// A schema behind the binary is refused; one ahead of it, as a rolling
// upgrade leaves the previous release's processes, is taken.
func TestCommandsRefuseASchemaBehindAndTakeOneAhead(t *testing.T) {
	d := testdb.New(t)
	for _, c := range []struct {
		shift int32
		code  int
	}{{-1, 1}, {+2, 0}} {
		if _, err := d.Pool().Exec(context.Background(), `UPDATE schema_version SET version = $1`, db.LatestVersion()+c.shift); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(t, d.URL, "org", "create", "--name", fmt.Sprintf("Acme %d", c.shift))
		if code != c.code || (c.code == 1 && !strings.Contains(errOut, "commerce migrate")) {
			t.Errorf("schema at latest%+d: exit %d, stderr %q; want exit %d", c.shift, code, errOut, c.code)
		}
	}
}

func TestCatalogueSchemaCommands(t *testing.T) {
	d := testdb.New(t)
	_, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--json")
	var org struct{ ID string }
	mustJSON(t, out, &org)
	code, out, errOut := run(t, d.URL, "schema", "create", "--org", org.ID, "--name", "Fasteners", "--json",
		"--fields", `[{"key": "length_mm", "type": "integer", "required": true}, {"key": "finish", "type": "enum", "options": ["Plain", "Zinc"]}]`)
	if code != 0 {
		t.Fatalf("schema create: %d %s", code, errOut)
	}
	var s struct {
		ID     string
		Fields []map[string]any
	}
	mustJSON(t, out, &s)
	if s.ID == "" || len(s.Fields) != 2 {
		t.Fatalf("schema create JSON: %s", out)
	}
	if code, out, _ := run(t, d.URL, "schema", "list", "--org", org.ID); code != 0 || !strings.Contains(out, "length_mm:integer") {
		t.Fatalf("schema list: %d %s", code, out)
	}
	for _, bad := range [][]string{
		{"--fields", `[{"key": "a", "type": "date"}]`},
		{"--fields", `not json`},
		{"--fields", `[{"key": "a", "type": "enum"}]`},
	} {
		args := append([]string{"schema", "create", "--org", org.ID, "--name", "Other"}, bad...)
		if code, _, errOut := run(t, d.URL, args...); code == 0 || errOut == "" {
			t.Errorf("%v accepted", bad)
		}
	}
	if code, _, errOut := run(t, d.URL, "schema", "create", "--org", org.ID, "--name", "Fasteners", "--fields", `[]`); code != 1 || !strings.Contains(errOut, "exists") {
		t.Errorf("duplicate name: %d %s", code, errOut)
	}
}

func TestVersionPrintsTheRelease(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli.Execute(cli.NewRoot(), []string{"version", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("%d %s", code, errOut.String())
	}
	var got version.Info
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got != version.Get() {
		t.Fatalf("%s %v", out.String(), err)
	}
}

// `org subscription-cap` shows an organisation's cap on webhook
// subscriptions (100 unless set) and how many it holds, and --set changes
// it; `webhook add` past the cap is refused, naming it.
func TestOrgSubscriptionCapThroughTheCLI(t *testing.T) {
	d := testdb.New(t)
	t.Setenv("COMMERCE_SECRET_KEY", strings.Repeat("ab", 32))
	_, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--json")
	var org struct{ ID string }
	mustJSON(t, out, &org)
	code, out, errOut := run(t, d.URL, "org", "subscription-cap", "--org", org.ID, "--json")
	var c struct {
		Cap  int `json:"subscription_cap"`
		Held int `json:"subscriptions"`
	}
	mustJSON(t, out, &c)
	if code != 0 || c.Cap != 100 || c.Held != 0 {
		t.Fatalf("the default cap: %d %s %s", code, out, errOut)
	}
	code, out, errOut = run(t, d.URL, "org", "subscription-cap", "--org", org.ID, "--set", "1")
	if code != 0 || !regexp.MustCompile(`subscription cap\s+1\n`).MatchString(out) {
		t.Fatalf("--set 1: %d %s %s", code, out, errOut)
	}
	add := func() (int, string) {
		code, _, errOut := run(t, d.URL, "webhook", "add", "--org", org.ID, "--url", "https://8.8.8.8/hook", "--allow-private-targets=false")
		return code, errOut
	}
	if code, errOut := add(); code != 0 {
		t.Fatalf("the first subscription: %d %s", code, errOut)
	}
	if code, errOut := add(); code == 0 || !strings.Contains(errOut, "its cap of 1") {
		t.Fatalf("a subscription past the cap: %d %s", code, errOut)
	}
	if code, _, errOut := run(t, d.URL, "org", "subscription-cap", "--org", org.ID, "--set", "-1"); code == 0 || !strings.Contains(errOut, "0 to 100000") {
		t.Fatalf("--set -1: %d %s", code, errOut)
	}
}
