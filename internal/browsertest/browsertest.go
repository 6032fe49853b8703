// Package browsertest drives the support console in a real browser for
// tests: a headless Chromium (CHROMIUM, or the Debian package's
// /usr/bin/chromium) per tab, axe-core (AXE_CORE, or the copy .ci/axe-core
// installs under .cache/node) run on every page a tab opens or a click
// leads to, and on a phone's screen a check that nothing scrolls sideways.
// The console's own tests and the end-to-end suite use it.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium is the browser the tests drive.
func Chromium(t testing.TB) string {
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

// AxeSource is the text of axe-core's axe.min.js: AXE_CORE names the file
// (relative to the repository root, root, when not absolute), by default
// the one .ci/axe-core installs under .cache/node.
func AxeSource(t testing.TB, root string) string {
	t.Helper()
	path := os.Getenv("AXE_CORE")
	if path == "" {
		path = ".cache/node/node_modules/axe-core/axe.min.js"
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the console's browser tests check every page with axe-core, and need its axe.min.js at %s: "+
			"run .ci/axe-core from the repository root (it installs axe-core with npm under .cache/node; `make test` runs it), "+
			"or set AXE_CORE to the file's path: %v", path, err)
	}
	return string(src)
}

// Tab is a browser of its own (its own profile: the cookies of one sign-in
// reach no other) on the console at Base.
type Tab struct {
	T    *testing.T
	Ctx  context.Context
	Base string
	// Screen, when set, is the width of a phone's screen (Phone): every
	// page the tab opens or a click leads to must fit it.
	Screen int
	// shots is where Screenshot saves ("" for nowhere).
	shots string
	axeJS string
	dir   string // the browser's profile and temporary files, removed with the tab
}

// New returns a tab factory for the console at base; root is the
// repository's root from the calling package. Screenshots are saved where
// COMMERCE_CONSOLE_SCREENSHOTS says (relative to root), when it is set.
func New(t *testing.T, base, root string) func() *Tab {
	t.Helper()
	path := Chromium(t)
	axeJS := AxeSource(t, root)
	shots := os.Getenv("COMMERCE_CONSOLE_SCREENSHOTS")
	if shots != "" && !filepath.IsAbs(shots) {
		shots = filepath.Join(root, shots)
	}
	return func() *Tab {
		// The browser's profile and its temporary files (TMPDIR: its
		// singleton socket) go in a directory of the tab's, removed once
		// the browser has ended (cleanups run last registered first).
		dir, err := os.MkdirTemp("", "browser-")
		if err != nil {
			t.Fatal(err)
		}
		// The browser leads a process group of its own, so that its
		// helpers, which outlive it by a moment, can be ended with it.
		var browser *exec.Cmd
		t.Cleanup(func() { endAndRemove(t, browser, dir) })
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox,
			chromedp.WindowSize(1366, 900),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.Flag("lang", "en-GB"),
			chromedp.UserDataDir(filepath.Join(dir, "profile")),
			chromedp.Env("TMPDIR="+dir),
			chromedp.ModifyCmdFunc(func(cmd *exec.Cmd) {
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
				browser = cmd
			}),
		)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		t.Cleanup(cancelAlloc)
		ctx, cancel := chromedp.NewContext(actx)
		t.Cleanup(cancel)
		// The first run starts the browser, on the tab's own context: one
		// derived from it would end the browser with it. Times are shown in
		// the viewer's zone: this one's is London.
		if err := chromedp.Run(ctx, emulation.SetTimezoneOverride("Europe/London")); err != nil {
			t.Fatalf("starting Chromium (%s): %v", path, err)
		}
		return &Tab{T: t, Ctx: ctx, Base: base, shots: shots, axeJS: axeJS, dir: dir}
	}
}

// endAndRemove ends what is left of the browser's process group (its
// helpers: the network service, the cache) once the browser itself has
// ended, and removes dir, the browser's. It says so in the log if dir
// could not be removed.
func endAndRemove(t *testing.T, browser *exec.Cmd, dir string) {
	if browser != nil && browser.Process != nil {
		_ = syscall.Kill(-browser.Process.Pid, syscall.SIGKILL)
	}
	var err error
	for range 20 { // a helper being ended may still write for a moment
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the browser's directory %s not removed: %v", dir, err)
}

// Phone gives the tab a phone's screen, width by height CSS pixels.
func (b *Tab) Phone(width, height int) {
	b.T.Helper()
	b.Run("a phone's screen", emulation.SetDeviceMetricsOverride(int64(width), int64(height), 3, true))
	b.Screen = width
}

// Run runs browser actions, each bounded so that a stuck page fails the
// test instead of hanging it.
func (b *Tab) Run(what string, actions ...chromedp.Action) {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var html string
		_ = chromedp.Run(b.Ctx, chromedp.OuterHTML("main", &html, chromedp.ByQuery, chromedp.AtLeast(0)))
		b.T.Fatalf("%s: %v\npage: %s", what, err, html)
	}
}

// Respond runs actions that make the tab load a page, and returns that
// page's HTTP status.
func (b *Tab) Respond(what string, actions ...chromedp.Action) int64 {
	b.T.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		b.T.Fatalf("%s: %v", what, err)
	}
	return resp.Status
}

// Load is Respond, then the page checked with axe (and on a phone, that it
// fits).
func (b *Tab) Load(what string, actions ...chromedp.Action) int64 {
	b.T.Helper()
	status := b.Respond(what, actions...)
	b.Axe(what)
	b.Fits(what)
	return status
}

// Open opens a console page, checks it, and returns its status.
func (b *Tab) Open(path string) int64 {
	b.T.Helper()
	return b.Load("open "+path, chromedp.Navigate(b.Base+path))
}

// Click clicks what sel finds, waits for the page it leads to, checks it,
// and returns its status.
func (b *Tab) Click(sel string) int64 {
	b.T.Helper()
	return b.Load("click "+sel, chromedp.Click(sel, chromedp.ByQuery, chromedp.NodeVisible))
}

// Text is the text of what sel finds, trimmed.
func (b *Tab) Text(sel string) string {
	b.T.Helper()
	var s string
	b.Run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
	return strings.TrimSpace(s)
}

// Eval evaluates js on the page into out.
func (b *Tab) Eval(what, js string, out any) {
	b.T.Helper()
	b.Run(what, chromedp.Evaluate(js, out))
}

// Present says whether sel finds anything.
func (b *Tab) Present(sel string) bool {
	b.T.Helper()
	var ok bool
	b.Eval("look for "+sel, fmt.Sprintf(`document.querySelector(%q) !== null`, sel), &ok)
	return ok
}

// Box is where an element is on the page, in CSS pixels.
type Box struct{ Top, Bottom, Left, Right float64 }

// Box is where what sel finds is.
func (b *Tab) Box(sel string) Box {
	b.T.Helper()
	var out Box
	b.Eval("measure "+sel, fmt.Sprintf(`(() => { const r = document.querySelector(%q).getBoundingClientRect();
		return {Top: r.top + scrollY, Bottom: r.bottom + scrollY, Left: r.left, Right: r.right}; })()`, sel), &out)
	return out
}

// Fits checks, on a tab with a phone's screen, that the page is no wider
// than the screen: nothing scrolls sideways. A mobile browser widens its
// layout viewport to content that overflows, so the page is measured
// against the screen's width, not the viewport's.
func (b *Tab) Fits(page string) {
	b.T.Helper()
	if b.Screen == 0 {
		return
	}
	var width int
	b.Eval("measure the page after "+page, `Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)`, &width)
	if width > b.Screen {
		var wide []string
		b.Eval("find what is wide", fmt.Sprintf(`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > %d).slice(0, 4).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))`, b.Screen+1), &wide)
		b.T.Errorf("the page after %s is %d px wide on a %d px phone: %v", page, width, b.Screen, wide)
	}
}

// axeViolation is what a test reports of one of axe-core's violations.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Nodes   int      `json:"nodes"`
	Targets []string `json:"targets"`
	Summary string   `json:"summary"`
}

// Axe runs axe-core on the page the tab shows (after how it got there), at
// the tab's current size, and fails the test for each violation.
func (b *Tab) Axe(page string) {
	b.T.Helper()
	// Injected and run in one evaluation: a page that refreshes itself
	// (the bulk replay's) may reload between two.
	script := b.axeJS + `
;axe.run(document, {resultTypes: ['violations'], rules: {'target-size': {enabled: true}}}).then(r => ({
	url: location.pathname + location.search,
	width: window.innerWidth,
	violations: r.violations.map(v => ({
		id: v.id, impact: v.impact || '', help: v.help, nodes: v.nodes.length,
		targets: v.nodes.slice(0, 3).map(n => String(n.target)),
		summary: v.nodes.length ? (v.nodes[0].failureSummary || '') : '',
	})),
}))`
	var res struct {
		URL        string         `json:"url"`
		Width      int            `json:"width"`
		Violations []axeViolation `json:"violations"`
	}
	var err error
	for range 3 {
		ctx, cancel := context.WithTimeout(b.Ctx, 30*time.Second)
		err = chromedp.Run(ctx, chromedp.Evaluate(script, &res, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
			return p.WithAwaitPromise(true)
		}))
		cancel()
		if err == nil {
			break
		}
		// The page reloaded itself meanwhile: check it again.
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		b.T.Fatalf("axe on the page after %s: %v", page, err)
	}
	for _, v := range res.Violations {
		b.T.Errorf("axe: %s (%d px wide, after %s): %s [%s]: %s; %d element(s): %s\n%s",
			res.URL, res.Width, page, v.ID, v.Impact, v.Help, v.Nodes, strings.Join(v.Targets, " | "), v.Summary)
	}
}

// Screenshot saves the page as name.png when screenshots are asked for.
func (b *Tab) Screenshot(name string) {
	b.T.Helper()
	if b.shots == "" {
		return
	}
	var png []byte
	b.Run("screenshot "+name, chromedp.FullScreenshot(&png, 100))
	if err := os.MkdirAll(b.shots, 0o750); err != nil {
		b.T.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o600); err != nil {
		b.T.Fatal(err)
	}
}
