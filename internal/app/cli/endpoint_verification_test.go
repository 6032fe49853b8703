package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// `endpoint verification set` sets how an endpoint verifies its sender as
// the API's PUT does: the new HMAC secret or Basic password printed once
// (never in `endpoint list`), audited as the operator; a flag that does
// not fit the kind, or breaks a rule, is a usage error naming it.
func TestEndpointVerificationThroughTheCLI(t *testing.T) {
	t.Setenv("COMMERCE_SECRET_KEY", strings.Repeat("ab", 32))
	d := testdb.New(t)
	ctx := context.Background()
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "GitHub", Action: domain.ActionERPOrderStatus})
	if err != nil {
		t.Fatal(err)
	}
	id := ep.ID.String()
	set := func(args ...string) (int, map[string]any, string) {
		t.Helper()
		code, out, errOut := run(t, d.URL, append([]string{"endpoint", "verification", "set", id, "--json"}, args...)...)
		var v map[string]any
		if code == 0 {
			mustJSON(t, out, &v)
		}
		return code, v, errOut
	}

	code, v, errOut := set("--kind", "hmac", "--header", "X-Hub-Signature-256", "--algorithm", "sha256", "--encoding", "hex", "--prefix", "sha256=")
	secret, _ := v["secret"].(string)
	scheme, _ := v["hmac"].(map[string]any)
	if code != 0 || v["kind"] != "hmac" || !strings.HasPrefix(secret, "hmac_") || scheme["header"] != "X-Hub-Signature-256" ||
		scheme["prefix"] != "sha256=" || v["password"] != nil {
		t.Fatalf("set hmac: exit %d %v %s", code, v, errOut)
	}
	code, out, _ := run(t, d.URL, "endpoint", "list", "--org", org.ID.String(), "--json")
	if code != 0 || strings.Contains(out, secret) || !strings.Contains(out, `"kind": "hmac"`) || !strings.Contains(out, "X-Hub-Signature-256") {
		t.Fatalf("endpoint list: %d %s", code, out)
	}
	code, out, _ = run(t, d.URL, "endpoint", "list", "--org", org.ID.String())
	if code != 0 || !strings.Contains(out, "VERIFICATION") || !strings.Contains(out, "hmac") {
		t.Fatalf("endpoint list as a table: %d %s", code, out)
	}

	code, out, _ = run(t, d.URL, "endpoint", "verification", "set", id, "--kind", "hmac", "--header", "X-Signature", "--algorithm", "sha512",
		"--encoding", "base64", "--timestamp-header", "X-Signature-Timestamp", "--tolerance", "60")
	if text := strings.Join(strings.Fields(out), " "); code != 0 || !strings.Contains(text, "timestamp header X-Signature-Timestamp") ||
		!strings.Contains(text, "tolerance 60 s") || !strings.Contains(text, "secret hmac_") {
		t.Fatalf("set hmac with a timestamp, as a table: %d %s", code, out)
	}

	code, v, errOut = set("--kind", "basic", "--username", "erp")
	password, _ := v["password"].(string)
	if code != 0 || v["kind"] != "basic" || v["username"] != "erp" || !strings.HasPrefix(password, "pw_") || v["secret"] != nil {
		t.Fatalf("set basic: exit %d %v %s", code, v, errOut)
	}
	for _, kind := range []string{"none", "service"} {
		if code, v, errOut := set("--kind", kind); code != 0 || v["kind"] != kind || v["secret"] != nil || v["password"] != nil {
			t.Fatalf("set %s: exit %d %v %s", kind, code, v, errOut)
		}
	}
	var entries int
	if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = 'endpoint.verification'
		AND actor LIKE 'cli:%' AND detail::text NOT LIKE '%' || $2 || '%' AND detail::text NOT LIKE '%' || $3 || '%'`,
		org.ID, secret, password).Scan(&entries); err != nil || entries != 5 {
		t.Fatalf("audit entries by the operator, without secrets: %d, %v; want 5", entries, err)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "none", "--header", "X-Sig"}, "--header is only for --kind hmac"},
		{[]string{"--kind", "hmac", "--header", "X Sig", "--algorithm", "sha256", "--encoding", "hex"}, "--header must be a header name"},
		{[]string{"--kind", "hmac", "--header", "X-Sig", "--algorithm", "md5", "--encoding", "hex"}, "--algorithm must be sha256 or sha512"},
		{[]string{"--kind", "hmac", "--header", "X-Sig", "--algorithm", "sha256", "--encoding", "hex", "--tolerance", "30"}, "--tolerance needs --timestamp-header"},
		{[]string{"--kind", "basic"}, "username is required"},
		{[]string{"--kind", "ldap"}, "kind"},
	} {
		if code, _, errOut := set(c.args...); code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d %q; want a usage error saying %q", c.args, code, errOut, c.want)
		}
	}
	if code, _, errOut := run(t, d.URL, "endpoint", "verification", "set", id); code == 0 || !strings.Contains(errOut, "kind") {
		t.Errorf("without --kind: exit %d %q", code, errOut)
	}
}
