package console_test

import (
	"context"
	"strings"

	"github.com/commerce-integration/commerce/internal/app/console"
	"github.com/commerce-integration/commerce/internal/browsertest"
)

// repoRoot is the repository's top, from this package.
const repoRoot = "../../.."

// tab is a headless Chromium of its own (its own cookies) on the console,
// running axe-core on every page it opens (internal/browsertest).
type tab = browsertest.Tab

// newTab starts a browser; phoneWidth > 0 gives it a phone's screen.
func (f *fixture) newTab(phoneWidth int) *tab {
	f.t.Helper()
	b := browsertest.New(f.t, f.srv.URL, repoRoot)()
	if phoneWidth > 0 {
		b.Phone(phoneWidth, 812)
	}
	return b
}

// signInTab opens a one-time link for email in b and presses its button.
func (f *fixture) signInTab(b *tab, email string) {
	f.t.Helper()
	token, err := f.d.CreateConsoleLink(context.Background(), f.org.ID, email)
	if err != nil {
		f.t.Fatal(err)
	}
	b.Open(strings.TrimPrefix(console.LoginURL(f.srv.URL, token), f.srv.URL))
	if status := b.Click("#signin button"); status != 200 || !strings.Contains(b.Text("#flash"), "Signed in as "+email) {
		f.t.Fatalf("signing in as %s answered %d", email, status)
	}
}
