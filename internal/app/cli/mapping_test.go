package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/internal/testdb"
)

func TestEndpointMappingThroughTheCLI(t *testing.T) {
	d := testdb.New(t)
	_, out, _ := run(t, d.URL, "org", "create", "--name", "Acme", "--owner-email", "owner@acme.example", "--json")
	var org struct{ ID string }
	mustJSON(t, out, &org)
	_, out, _ = run(t, d.URL, "endpoint", "create", "--org", org.ID, "--as", "owner@acme.example", "--name", "ERP", "--action", "erp_order_status", "--json")
	var ep struct{ ID string }
	mustJSON(t, out, &ep)

	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := file("bad.js", "function map(post) {\n  return {;\n}")
	if code, _, errOut := run(t, d.URL, "endpoint", "mapping", "set", ep.ID, "--file", bad); code == 0 || !strings.Contains(errOut, "(line 2:") {
		t.Fatalf("a syntax error: %d %s", code, errOut)
	}
	good := file("map.js", `function map(post) { return {order_ref: post.body.DocNum, status: "shipped"} }`)
	code, out, errOut := run(t, d.URL, "endpoint", "mapping", "set", ep.ID, "--file", good, "--json")
	var v struct {
		Version   int    `json:"version"`
		CreatedBy string `json:"created_by"`
	}
	mustJSON(t, out, &v)
	if code != 0 || v.Version != 1 || !strings.HasPrefix(v.CreatedBy, "cli:") {
		t.Fatalf("set: %d %s %s", code, out, errOut)
	}
	if code, out, _ := run(t, d.URL, "endpoint", "mapping", "show", ep.ID); code != 0 || !strings.Contains(out, "post.body.DocNum") || !strings.Contains(out, "version") {
		t.Fatalf("show: %d %s", code, out)
	}
	body := file("post.json", `{"DocNum": "SO-9"}`)
	if code, out, errOut := run(t, d.URL, "endpoint", "mapping", "test", ep.ID, "--body", body); code != 0 || !strings.Contains(out, "mapped") ||
		!strings.Contains(out, `{"order_ref":"SO-9","status":"shipped"}`) {
		t.Fatalf("test: %d %s %s", code, out, errOut)
	}
	if code, out, _ := run(t, d.URL, "endpoint", "mapping", "remove", ep.ID); code != 0 || !strings.Contains(out, "mapping ended") {
		t.Fatalf("remove: %d %s", code, out)
	}
	if code, out, _ := run(t, d.URL, "endpoint", "mapping", "versions", ep.ID); code != 0 || !strings.Contains(out, "(ended)") || strings.Count(out, "cli:") != 2 {
		t.Fatalf("versions: %d %s", code, out)
	}
	// Each write is in the audit log.
	if code, out, _ := run(t, d.URL, "audit", "list", "--org", org.ID); code != 0 || !strings.Contains(out, "endpoint.mapping.set") || !strings.Contains(out, "endpoint.mapping.remove") {
		t.Fatalf("audit: %d %s", code, out)
	}
}
