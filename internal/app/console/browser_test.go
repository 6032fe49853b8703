package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/commerce-integration/commerce/internal/app/console"
)

// The browser this package's tests drive, as internal/e2e's console tests
// do: a headless Chromium (CHROMIUM, or /usr/bin/chromium) running
// axe-core (AXE_CORE, or the one .ci/axe-core installs under .cache/node)
// on every page a tab opens or a click leads to.

// repoRoot is the repository's top, from this package.
const repoRoot = "../../.."

func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the console's browser tests need a headless Chromium at %s (Debian: apt-get install -y chromium; "+
			"or set CHROMIUM to its path): %v", path, err)
	}
	return path
}

func axeCore(t *testing.T) string {
	t.Helper()
	path := os.Getenv("AXE_CORE")
	if path == "" {
		path = ".cache/node/node_modules/axe-core/axe.min.js"
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(repoRoot, path)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the console's browser tests check every page with axe-core, and need its axe.min.js at %s: "+
			"run .ci/axe-core from the repository root, or set AXE_CORE to the file's path: %v", path, err)
	}
	return string(src)
}

// tab is a headless Chromium of its own (its own cookies) on the console.
type tab struct {
	t     *testing.T
	ctx   context.Context
	base  string
	axeJS string
	// screen, when set, is a phone's screen width: every page the tab
	// opens or a click leads to must fit it.
	screen int
}

// newTab starts a browser; phoneWidth > 0 gives it a phone's screen.
func (f *fixture) newTab(phoneWidth int) *tab {
	t := f.t
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.WindowSize(1366, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("lang", "en-GB"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	b := &tab{t: t, ctx: ctx, base: f.srv.URL, axeJS: axeCore(t)}
	// The first run starts the browser, on the tab's own context: one it
	// derived would end the browser with it. Times are shown in the
	// viewer's zone: this one's is London.
	if err := chromedp.Run(ctx, emulation.SetTimezoneOverride("Europe/London")); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	if phoneWidth > 0 {
		b.run("a phone's screen", emulation.SetDeviceMetricsOverride(int64(phoneWidth), 812, 3, true))
		b.screen = phoneWidth
	}
	return b
}

// run runs browser actions, each bounded so that a stuck page fails the
// test instead of hanging it.
func (b *tab) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var html string
		_ = chromedp.Run(b.ctx, chromedp.OuterHTML("main", &html, chromedp.ByQuery, chromedp.AtLeast(0)))
		b.t.Fatalf("%s: %v\npage: %s", what, err, html)
	}
}

// load runs actions that load a page, checks it with axe (and on a phone
// that it fits), and returns its HTTP status.
func (b *tab) load(what string, actions ...chromedp.Action) int64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
	b.axe(what)
	b.fits(what)
	return resp.Status
}

func (b *tab) open(path string) int64 {
	b.t.Helper()
	return b.load("open "+path, chromedp.Navigate(b.base+path))
}

func (b *tab) click(sel string) int64 {
	b.t.Helper()
	return b.load("click "+sel, chromedp.Click(sel, chromedp.ByQuery, chromedp.NodeVisible))
}

func (b *tab) text(sel string) string {
	b.t.Helper()
	var s string
	b.run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

func (b *tab) eval(what, js string, out any) {
	b.t.Helper()
	b.run(what, chromedp.Evaluate(js, out))
}

func (b *tab) present(sel string) bool {
	b.t.Helper()
	var ok bool
	b.eval("look for "+sel, fmt.Sprintf(`document.querySelector(%q) !== null`, sel), &ok)
	return ok
}

// box is where an element is on the page, in CSS pixels.
type box struct{ Top, Bottom, Left, Right float64 }

func (b *tab) box(sel string) box {
	b.t.Helper()
	var out box
	b.eval("measure "+sel, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return {Top: r.top + scrollY, Bottom: r.bottom + scrollY, Left: r.left, Right: r.right}; })()`, sel), &out)
	return out
}

// fits checks, on a phone, that nothing makes the page wider than the
// screen (a mobile browser widens its layout to content that overflows,
// so the page is measured against the screen).
func (b *tab) fits(page string) {
	b.t.Helper()
	if b.screen == 0 {
		return
	}
	var width int
	b.eval("measure the page after "+page, `Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)`, &width)
	if width > b.screen {
		var wide []string
		b.eval("find what is wide", fmt.Sprintf(`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > %d).slice(0, 4).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`, b.screen+1), &wide)
		b.t.Errorf("the page after %s is %d px wide on a %d px phone: %v", page, width, b.screen, wide)
	}
}

// axe runs axe-core on the page the tab shows and fails the test for
// each violation.
func (b *tab) axe(page string) {
	b.t.Helper()
	script := b.axeJS + `
;axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v =>
	v.id + ' [' + (v.impact || '') + ']: ' + v.help + '; ' + v.nodes.slice(0, 3).map(n => String(n.target)).join(' | ') +
	'\n' + (v.nodes.length ? (v.nodes[0].failureSummary || '') : '')))`
	var violations []string
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, chromedp.Evaluate(script, &violations, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	})); err != nil {
		b.t.Fatalf("axe on the page after %s: %v", page, err)
	}
	for _, v := range violations {
		b.t.Errorf("axe (after %s, %d px screen): %s", page, b.screen, v)
	}
}

// signInTab opens a one-time link for email in b and presses its button.
func (f *fixture) signInTab(b *tab, email string) {
	f.t.Helper()
	token, err := f.d.CreateConsoleLink(context.Background(), f.org.ID, email)
	if err != nil {
		f.t.Fatal(err)
	}
	b.open(strings.TrimPrefix(console.LoginURL(f.srv.URL, token), f.srv.URL))
	if status := b.click("#signin button"); status != 200 || !strings.Contains(b.text("#flash"), "Signed in as "+email) {
		f.t.Fatalf("signing in as %s answered %d", email, status)
	}
}
