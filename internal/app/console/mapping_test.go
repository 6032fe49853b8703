package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	guuid "github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// senderBody is a post in its sender's own shape, which the endpoint's
// mapping turns into an order_invoice body.
const senderBody = `{"DocNum": "SO-9", "Invoice": {"No": "INV-9", "Total": 123456}}`

// brokenMapping reads a field the sender does not send: it throws on line 2.
const brokenMapping = `function map(post) {
  return {order_ref: post.body.DocNum, invoice_ref: post.body.Inv.No, amount_minor: post.body.Invoice.Total};
}
`

// fixedMapping is brokenMapping put right, and logging.
const fixedMapping = `function map(post) {
  console.log("invoice", post.body.Invoice.No);
  return {order_ref: post.body.DocNum, invoice_ref: post.body.Invoice.No, amount_minor: post.body.Invoice.Total};
}
`

// mapped gives the fixture's endpoint brokenMapping as version 1, seeds
// the order it names, and posts senderBody, which the mapping fails (422);
// it returns that receipt's id.
func (f *fixture) mapped() string {
	f.t.Helper()
	ctx := context.Background()
	ep := guuid.MustParse(f.endpoint)
	if _, err := f.svc.SetEndpointMapping(ctx, integrations.OperatorActor("ops"), f.org.ID, ep, brokenMapping); err != nil {
		f.t.Fatal(err)
	}
	sf, _ := domain.ParseSeed([]byte(`{"orders": [{"number": "SO-9", "status": "confirmed", "lines": [{"description": "x", "qty": 1, "unit_price_minor": 200000}]}]}`))
	if _, err := f.d.Seed(ctx, f.org.ID, sf); err != nil {
		f.t.Fatal(err)
	}
	resp, err := http.Post(f.srv.URL+"/api/in/"+f.token, "application/json", strings.NewReader(senderBody))
	if err != nil {
		f.t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(answer), "mapping failed") {
		f.t.Fatalf("a post the mapping fails: %d %s", resp.StatusCode, answer)
	}
	var id string
	if err := f.d.Pool().QueryRow(ctx, `SELECT id::text FROM inbound_receipts WHERE org_id = $1 AND mapping_version = 1`, f.org.ID).Scan(&id); err != nil {
		f.t.Fatal(err)
	}
	return id
}

// The editor's forms, without a browser: the page shows the current
// version and runs it on the newest failed receipt; Run maps the text in
// the box; a save that does not compile keeps the text and says where;
// a save makes the next version; End asks first. Members read and run,
// but saving and ending are refused them, and every form needs its token.
func TestMappingEditorForms(t *testing.T) {
	f := newFixture(t)
	failed := f.mapped()
	editor := "/console/endpoints/" + f.endpoint + "/mapping"
	owner, _ := f.signIn("owner@acme.example")

	_, page := owner.get("/console/")
	if !strings.Contains(page, `href="`+editor+`"`) {
		t.Fatalf("the endpoints page does not link the editor: %s", page)
	}
	status, page := owner.get(editor)
	for _, want := range []string{"Version <strong>1</strong>, by cli:ops", `value="` + failed + `" checked`,
		"mapping failed: TypeError", `id="map-error"`, "Run of version 1 (the current one)", `&#34;DocNum&#34;: &#34;SO-9&#34;`,
		`id="save"`, `id="end-mapping"`} {
		if status != 200 || !strings.Contains(page, want) {
			t.Fatalf("the editor lacks %q: %d %s", want, status, page)
		}
	}
	token := csrf(t, page)

	status, page = owner.post(editor+"/run", url.Values{"csrf": {token}, "source": {strings.ReplaceAll(fixedMapping, "\n", "\r\n")}, "receipt": {failed}})
	for _, want := range []string{`id="mapped-body"`, `&#34;invoice_ref&#34;: &#34;INV-9&#34;`, `id="map-outcome">applied`,
		`<td><code>invoice:INV-9</code></td><td>—</td><td>issued</td>`, "invoice INV-9", "Run of the text in the editor"} {
		if status != 200 || !strings.Contains(page, want) {
			t.Fatalf("the run lacks %q: %d %s", want, status, page)
		}
	}
	if strings.Contains(page, `id="map-error"`) {
		t.Fatalf("the fixed mapping's run shows an error: %s", page)
	}

	// A source that does not compile is kept, with where it fails.
	bad := "function map(post) {\n  return {order_ref: ;\n}\n"
	status, page = owner.post(editor, url.Values{"csrf": {token}, "source": {bad}, "receipt": {failed}})
	if status != http.StatusBadRequest || !strings.Contains(page, `id="source-error"`) || !strings.Contains(page, "<strong>Line 2, column") ||
		!strings.Contains(page, "SyntaxError") || !strings.Contains(page, "  return {order_ref: ;") || !strings.Contains(page, `aria-invalid="true"`) {
		t.Fatalf("a save that does not compile: %d %s", status, page)
	}
	if status, page := owner.post(editor, url.Values{"csrf": {token}, "source": {" \n"}}); status != http.StatusBadRequest ||
		!strings.Contains(page, "The source is empty") {
		t.Fatalf("an empty save: %d %s", status, page)
	}
	status, page = owner.post(editor, url.Values{"csrf": {token}, "source": {fixedMapping}, "receipt": {failed}})
	if status != 200 || !strings.Contains(page, "Saved as version 2") || !strings.Contains(page, "Version <strong>2</strong>, by console:owner@acme.example") ||
		!strings.Contains(page, `<td>2 <span class="badge active">current</span></td>`) {
		t.Fatalf("save: %d %s", status, page)
	}
	cur, err := f.svc.EndpointMapping(context.Background(), f.org.ID, guuid.MustParse(f.endpoint))
	if err != nil || cur.Source == nil || *cur.Source != fixedMapping {
		t.Fatalf("the saved source %v: %v", cur.Source, err)
	}

	// Members read and run, and are refused the writes.
	member, _ := f.signIn("member@acme.example")
	_, page = member.get(editor)
	if strings.Contains(page, `id="save"`) || strings.Contains(page, "/mapping/end") || !strings.Contains(page, `id="run"`) {
		t.Fatalf("a member's editor: %s", page)
	}
	mtoken := csrf(t, page)
	if status, page := member.post(editor+"/run", url.Values{"csrf": {mtoken}, "source": {fixedMapping}, "receipt": {failed}}); status != 200 ||
		!strings.Contains(page, `id="mapped-body"`) {
		t.Fatalf("a member's run: %d %s", status, page)
	}
	for _, path := range []string{editor, editor + "/end"} {
		if status, page := member.post(path, url.Values{"csrf": {mtoken}, "source": {fixedMapping}}); status != http.StatusForbidden || !strings.Contains(page, "member") {
			t.Fatalf("a member's POST %s: %d %s", path, status, page)
		}
		if status, page := owner.post(path, url.Values{"source": {fixedMapping}}); status != http.StatusForbidden || !strings.Contains(page, "CSRF") {
			t.Fatalf("POST %s without its token: %d %s", path, status, page)
		}
	}
	if status, _ := owner.post(editor+"/run", url.Values{"csrf": {token}, "source": {"x\x00"}, "receipt": {failed}}); status != http.StatusBadRequest {
		t.Fatalf("a source holding a NUL: %d", status)
	}

	// Ending asks first.
	status, page = owner.post(editor+"/end", url.Values{"csrf": {token}})
	if status != 200 || !strings.Contains(page, `End the mapping of the endpoint &#34;ERP invoices&#34;?`) || !strings.Contains(page, `name="confirm" value="yes"`) {
		t.Fatalf("end, unconfirmed: %d %s", status, page)
	}
	status, page = owner.post(editor+"/end", url.Values{"csrf": {token}, "confirm": {"yes"}})
	if status != 200 || !strings.Contains(page, "Mapping ended with version 3") || strings.Contains(page, `id="end-mapping"`) ||
		!strings.Contains(page, "none: ended mapping") {
		t.Fatalf("end: %d %s", status, page)
	}
	entries, err := f.writes(f.d.ListAudit(context.Background(), f.org.ID, db.Page{Limit: 10}))
	if err != nil || len(entries) != 3 || entries[0].Action != "endpoint.mapping.remove" || entries[1].Actor != "console:owner@acme.example" {
		t.Fatalf("audit %+v %v", entries, err)
	}
	if status, _ := owner.get("/console/endpoints/" + guuid.NewString() + "/mapping"); status != http.StatusNotFound {
		t.Fatalf("another endpoint's editor: %d", status)
	}
	if status, _ := owner.get(editor + "?receipt=" + guuid.NewString()); status != http.StatusNotFound {
		t.Fatalf("the editor on a receipt of no endpoint: %d", status)
	}
}

// A receipt's page names the mapping version that ran and shows the body
// it made beside the body as sent; its replay maps the body again with
// the mapping chosen (current, the original, or a version), which the dry
// run names and its replay button carries on.
func TestReceiptPageShowsItsMappingAndReplaysChooseOne(t *testing.T) {
	f := newFixture(t)
	failed := f.mapped()
	ctx := context.Background()
	if _, err := f.svc.SetEndpointMapping(ctx, integrations.OperatorActor("ops"), f.org.ID, guuid.MustParse(f.endpoint), fixedMapping); err != nil {
		t.Fatal(err)
	}
	var applied string
	if err := f.d.Pool().QueryRow(ctx, `
		INSERT INTO inbound_receipts (id, org_id, endpoint_id, action, received_at, body, size_bytes, workflow_id, outcome, status_code,
		                              mapping_version, mapped_body)
		VALUES (gen_random_uuid(), $1, $2, 'order_invoice', now(), convert_to($3, 'UTF8'), length($3), 'inbound/y', 'applied', 200,
		        2, convert_to($4, 'UTF8'))
		RETURNING id::text`, f.org.ID, f.endpoint, senderBody, `{"order_ref":"SO-9","invoice_ref":"INV-9","amount_minor":123456}`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	owner, _ := f.signIn("owner@acme.example")
	_, page := owner.get("/console/receipts/" + applied)
	for _, want := range []string{`<dd id="mapping-version">version 2 · <a href="/console/endpoints/` + f.endpoint + `/mapping?receipt=` + applied + `">`,
		`<h3 id="mapped-title">Mapped by version 2</h3>`, `&#34;invoice_ref&#34;: &#34;INV-9&#34;`, `&#34;DocNum&#34;: &#34;SO-9&#34;`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the mapped receipt's page lacks %q: %s", want, page)
		}
	}
	_, page = owner.get("/console/receipts/" + failed)
	for _, want := range []string{`<dd id="mapping-version">version 1 `, `<option value="current">the current mapping (version 2)</option>`,
		`<option value="original">the one it was received with (version 1)</option>`, `<option value="1">version 1</option>`} {
		if !strings.Contains(page, want) {
			t.Fatalf("the failed receipt's page lacks %q: %s", want, page)
		}
	}
	if strings.Contains(page, `id="mapped-title"`) {
		t.Fatal("a receipt whose mapping made nothing shows a mapped body")
	}
	token := csrf(t, page)
	dryRun := "/console/receipts/" + failed + "/dry-run"
	status, page := owner.post(dryRun, url.Values{"csrf": {token}, "mapping": {"current"}})
	for _, want := range []string{"mapped again with the current mapping: version 2 ran", `id="dry-outcome">applied`, `<td><code>invoice:INV-9</code></td><td>—</td><td>issued</td>`,
		`<input type="hidden" name="mapping" value="current">`} {
		if status != 200 || !strings.Contains(page, want) {
			t.Fatalf("the dry run with the current mapping lacks %q: %d %s", want, status, page)
		}
	}
	status, page = owner.post(dryRun, url.Values{"csrf": {token}, "mapping": {"original"}})
	for _, want := range []string{"mapped again with the mapping it was received with", `id="dry-outcome">failed`, "mapping failed: TypeError",
		`<input type="hidden" name="mapping" value="original">`} {
		if status != 200 || !strings.Contains(page, want) {
			t.Fatalf("the dry run with the original mapping lacks %q: %d %s", want, status, page)
		}
	}
	if status, page := owner.post(dryRun, url.Values{"csrf": {token}, "mapping": {"2"}}); status != 200 || !strings.Contains(page, "with version 2: version 2 ran") {
		t.Fatalf("the dry run with version 2: %d %s", status, page)
	}
	if status, page := owner.post(dryRun, url.Values{"csrf": {token}, "mapping": {"7"}}); status != http.StatusNotFound ||
		!strings.Contains(page, "Refused: endpoint ") || !strings.Contains(page, "has no mapping version 7") {
		t.Fatalf("the dry run with a version that does not exist: %d %s", status, page)
	}
	if status, page := owner.post(dryRun, url.Values{"csrf": {token}, "mapping": {"latest"}}); status != http.StatusBadRequest || !strings.Contains(page, "Refused: mapping_version must be") {
		t.Fatalf("the dry run with a mapping that is none of the choices: %d %s", status, page)
	}
}
