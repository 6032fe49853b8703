package browsertest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestATabLeavesNoFilesBehind opens a page in a tab and ends the tab (its
// test's cleanups): the browser's directory, its profile with the cache
// its helpers write and its temporary files (Chromium's singleton socket),
// is gone afterwards, and no temporary directory of Chromium's own is left
// in the test's TMPDIR. When chromedp made and removed the profile,
// Chromium's helpers sometimes wrote into it after the removal, and a CI
// run left some fifteen profiles and thirty socket directories in /tmp.
// That race does not happen on demand: the test checks what is left.
func TestATabLeavesNoFilesBehind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html lang="en"><head><title>A page</title></head><body><main><h1>A page</h1><p>Some text.</p></main></body></html>`)
	}))
	defer srv.Close()
	// Where Chromium would put its own, and the tab its directory: short,
	// since a Unix socket's path (Chromium's singleton) is at most 107
	// bytes and t.TempDir's carries the test's name.
	tmp, err := os.MkdirTemp("", "bt")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	t.Setenv("TMPDIR", tmp)
	var dir string
	t.Run("a tab", func(t *testing.T) {
		tab := New(t, srv.URL, "../..")()
		dir = tab.dir
		tab.Open("/")
		if got := tab.Text("h1"); got != "A page" {
			t.Fatalf("the page's heading is %q", got)
		}
		if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
			t.Fatalf("the browser's directory %s while it runs: %v entries, %v", dir, len(entries), err)
		}
	})
	if dir == "" || !strings.HasPrefix(dir, filepath.Join(tmp, "browser-")) {
		t.Fatalf("the tab's directory is %q", dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Errorf("the browser's directory %s is still there after the tab ended (%v): %d entries", dir, err, len(entries))
	}
	if left, _ := os.ReadDir(os.Getenv("TMPDIR")); len(left) != 0 {
		t.Errorf("left in TMPDIR after the tab ended: %v", left)
	}
}
