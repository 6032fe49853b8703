package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/commerce-integration/commerce/internal/browsertest"
)

// The mapping editor in a browser: the owner opens it from the endpoints
// page, the receipt the mapping failed is picked, the text is put right
// and Run shows the mapped body, the logs and the changes where the error
// was, side by side; Save makes version 2; a source that does not compile
// is kept, with its line and column and the caret there; End asks first.
// On a 375 px phone the panes stack and nothing scrolls sideways, nor on
// the receipt's page and its dry run with a chosen version. axe-core finds
// nothing on any page.
func TestMappingEditorInTheBrowser(t *testing.T) {
	f := newFixture(t)
	failed := f.mapped()
	owner := f.newTab(0)
	f.signInTab(owner, "owner@acme.example")
	editor := "/console/endpoints/" + f.endpoint + "/mapping"
	owner.Open("/console/")
	if status := owner.Click(`a[href="` + editor + `"]`); status != 200 {
		t.Fatalf("the editor answered %d", status)
	}
	// The newest failed receipt is picked, and the current version's run
	// on it shows the error.
	radio := `#receipt-picker input[value="` + failed + `"]`
	var checked bool
	owner.Eval("is the failed receipt picked", `document.querySelector('`+radio+`').checked`, &checked)
	if !checked {
		t.Fatal("the editor did not pick the newest failed receipt")
	}
	if got := owner.Text("#map-error"); !strings.Contains(got, "mapping failed: TypeError") {
		t.Fatalf("the current version's run: %q", got)
	}

	// Pick it, put the text right, and run it.
	owner.Run("pick the receipt", chromedp.Click(radio, chromedp.ByQuery))
	owner.Run("edit the source", chromedp.SetValue("#source", fixedMapping, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('source').dispatchEvent(new Event('input'))`, nil))
	var stale bool
	owner.Eval("the stale note", `!document.getElementById('stale-note').hidden`, &stale)
	if !stale {
		t.Error("the run shown does not say it is of the text before")
	}
	if status := owner.Click("#run"); status != 200 {
		t.Fatalf("Run answered %d", status)
	}
	if owner.Present("#map-error") {
		t.Fatalf("the fixed text's run shows an error: %s", owner.Text("#map-error"))
	}
	for sel, want := range map[string]string{"#mapped-body": `"invoice_ref": "INV-9"`, "#sent-body": `"DocNum": "SO-9"`, "#map-logs": "invoice INV-9",
		"#map-outcome": "applied", "#pane-changes": "invoice:INV-9", "#run-title": "Run of the text in the editor"} {
		if got := owner.Text(sel); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q in it", sel, got, want)
		}
	}
	var kept string
	owner.Eval("the text box", `document.getElementById('source').value`, &kept)
	if kept != fixedMapping {
		t.Errorf("the text box after Run holds %q", kept)
	}
	// Side by side on a desktop screen: the body as sent and the mapped
	// body level, the logs and the changes below them.
	sent, mappedPane, logs := owner.Box("#pane-sent"), owner.Box("#pane-mapped"), owner.Box("#pane-logs")
	if d := sent.Top - mappedPane.Top; d > 1 || d < -1 || mappedPane.Left < sent.Right || logs.Top < sent.Bottom {
		t.Errorf("the panes are not side by side: sent %+v, mapped %+v, logs %+v", sent, mappedPane, logs)
	}

	// Save it as version 2.
	if status := owner.Click("#save"); status != 200 {
		t.Fatalf("Save answered %d", status)
	}
	if got := owner.Text("#flash"); !strings.HasPrefix(got, "Saved as version 2") {
		t.Fatalf("after Save: %q", got)
	}
	if got := owner.Text("#versions tbody tr:first-child td:first-child"); got != "2 current" {
		t.Errorf("the versions list starts %q", got)
	}

	// A source that does not compile: kept, with where, and the caret
	// put there.
	bad := "function map(post) {\n  return {order_ref: ;\n}\n"
	owner.Run("break the source", chromedp.SetValue("#source", bad, chromedp.ByQuery))
	if status := owner.Click("#save"); status != 400 {
		t.Fatalf("saving a source that does not compile answered %d", status)
	}
	if got := owner.Text("#source-error"); !strings.Contains(got, "Line 2, column") || !strings.Contains(got, "SyntaxError") {
		t.Errorf("the compile error: %q", got)
	}
	var caret struct {
		Focused bool
		Line    int
		Value   string
	}
	owner.Eval("the caret", `(() => { const s = document.getElementById('source');
		return {Focused: document.activeElement === s, Line: s.value.slice(0, s.selectionStart).split('\n').length, Value: s.value}; })()`, &caret)
	if !caret.Focused || caret.Line != 2 || caret.Value != bad {
		t.Errorf("the text box after the compile error: %+v", caret)
	}

	// Ending asks first.
	owner.Open(editor)
	owner.Click("#end-mapping")
	if got := owner.Text("#confirm-question"); !strings.Contains(got, `End the mapping of the endpoint "ERP invoices"?`) {
		t.Fatalf("the question: %q", got)
	}
	owner.Click("#confirm")
	if got := owner.Text("#current-version"); !strings.HasPrefix(got, "Mapping ended with version 3") {
		t.Errorf("after ending: %q", got)
	}

	// On a phone the editor, the picker and the panes stack, and nothing
	// scrolls sideways (fits, on every page the tab loads).
	phone := f.newTab(375)
	f.signInTab(phone, "owner@acme.example")
	phone.Open(editor)
	phone.Run("fill the text box", chromedp.SetValue("#source", fixedMapping, chromedp.ByQuery))
	phone.Click("#run")
	src, picker := phone.Box("#source"), phone.Box(".picker")
	sent, mappedPane, logs, changes := phone.Box("#pane-sent"), phone.Box("#pane-mapped"), phone.Box("#pane-logs"), phone.Box("#pane-changes")
	if picker.Top < src.Bottom || mappedPane.Top < sent.Bottom || logs.Top < mappedPane.Bottom || changes.Top < logs.Bottom {
		t.Errorf("on a phone the parts do not stack: source %+v, picker %+v, sent %+v, mapped %+v, logs %+v, changes %+v",
			src, picker, sent, mappedPane, logs, changes)
	}
	for _, p := range []browsertest.Box{src, picker, sent, mappedPane, logs, changes} {
		if p.Left < 0 || p.Right > 375 {
			t.Errorf("a part of the editor runs off a 375 px screen: %+v", p)
		}
	}
	// The receipt's replay, mapped with version 2.
	phone.Open("/console/receipts/" + failed)
	phone.Run("choose version 2", chromedp.SetValue("#replay-mapping", "2", chromedp.ByQuery))
	phone.Click("#dry-run")
	if got := phone.Text("#dry-mapping"); !strings.Contains(got, "with version 2: version 2 ran") {
		t.Errorf("the dry run with version 2: %q", got)
	}
}
