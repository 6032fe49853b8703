package dev

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/browsertest"
)

// failedPostReadsFailedInTheTemporalUI posts an invoice the order cannot
// take to dev's inbound URL and opens the Temporal Web UI's list of
// workflows in Chromium: the post's run reads Failed there, not Completed.
// With COMMERCE_CONSOLE_SCREENSHOTS set, the list is saved as
// temporal-ui-failed-post.png.
func failedPostReadsFailedInTheTemporalUI(t *testing.T, st devState) {
	t.Helper()
	post, err := http.Post(st.InboundURLs[domain.ActionOrderInvoice], "application/json",
		strings.NewReader(`{"order_ref": "SO-2026-0204", "invoice_ref": "INV-TOO-BIG", "amount_minor": 999999999}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(post.Body)
	post.Body.Close()
	receipt := post.Header.Get("X-Receipt-Id")
	if post.StatusCode != http.StatusUnprocessableEntity || receipt == "" {
		t.Fatalf("an invoice over the order's total: %d %s (receipt %q)", post.StatusCode, body, receipt)
	}
	workflowID := "inbound/" + receipt

	tab := browsertest.New(t, st.TemporalUIURL, "../../..")()
	list := st.TemporalUIURL + "/namespaces/default/workflows?query=" + url.QueryEscape(`WorkflowType="InboundAction"`)
	// The list reads visibility, which lags the run's close by a moment:
	// the page is loaded again until the run is there, Failed.
	var row string
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(tab.Ctx, 20*time.Second)
		err := chromedp.Run(ctx,
			chromedp.Navigate(list),
			chromedp.Poll(`(() => {
				const row = [...document.querySelectorAll("tr")].find(r => r.innerText.includes(`+jsString(workflowID)+`));
				return row ? row.innerText : "";
			})()`, &row, chromedp.WithPollingTimeout(10*time.Second)),
		)
		cancel()
		// The badge is styled upper case: innerText reads FAILED.
		if err == nil && strings.Contains(strings.ToLower(row), "failed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused post's run in the Temporal UI's list reads %q (%v), want Failed", row, err)
		}
	}
	if strings.Contains(strings.ToLower(row), "completed") {
		t.Fatalf("the refused post's run reads %q in the Temporal UI", row)
	}
	tab.Screenshot("temporal-ui-failed-post")
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
