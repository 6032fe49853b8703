package console_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/internal/browsertest"
)

// With COMMERCE_LIGHTHOUSE naming Lighthouse's command (`make lighthouse`
// installs it under .cache/node and runs this test), every page the
// console links to, with the long values of the walk seeded, scores at
// least 98 for accessibility in Lighthouse's mobile run (a phone's screen,
// where small navigation targets lose points). Each page's score is
// logged. Without it the test is skipped: Lighthouse takes some seconds a
// page, and the same pages pass axe-core in every run of the suite.
func TestLighthouseAccessibilityOnAPhone(t *testing.T) {
	cli := os.Getenv("COMMERCE_LIGHTHOUSE")
	if cli == "" {
		t.Skip("set COMMERCE_LIGHTHOUSE to Lighthouse's command (make lighthouse)")
	}
	f := newFixture(t)
	seedLongValues(t, f)
	b, _ := f.signIn("owner@acme.example")
	base, _ := url.Parse(f.srv.URL + "/console/")
	var cookies []string
	for _, c := range b.c.Jar.Cookies(base) {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	headers, _ := json.Marshal(map[string]string{"Cookie": strings.Join(cookies, "; ")})

	// The pages: the walk's, by following links in the served HTML.
	href := regexp.MustCompile(`href="([^"]+)"`)
	queue := []string{"/console/"}
	seen := map[string]bool{pageKind(queue[0]): true}
	var pages []string
	for len(queue) > 0 && len(pages) < 80 {
		page := queue[0]
		queue = queue[1:]
		status, html := b.get(page)
		if status != 200 {
			t.Fatalf("%s answered %d", page, status)
		}
		pages = append(pages, page)
		for _, m := range href.FindAllStringSubmatch(html, -1) {
			if p, ok := walkable(strings.ReplaceAll(m[1], "&amp;", "&")); ok && !seen[pageKind(p)] {
				seen[pageKind(p)] = true
				queue = append(queue, p)
			}
		}
	}
	slices.Sort(pages)
	chromium := browsertest.Chromium(t)
	for _, page := range pages {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, cli, f.srv.URL+page, "--only-categories=accessibility", "--output=json", "--quiet",
			"--chrome-flags=--headless=new --no-sandbox --disable-dev-shm-usage", "--extra-headers="+string(headers))
		cmd.Env = append(os.Environ(), "CHROME_PATH="+chromium)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("lighthouse on %s: %v\n%s", page, err, stderr.String())
		}
		var report struct {
			FinalURL   string `json:"finalDisplayedUrl"`
			Categories struct {
				Accessibility struct {
					Score float64 `json:"score"`
				} `json:"accessibility"`
			} `json:"categories"`
			Audits map[string]struct {
				Score   *float64 `json:"score"`
				Title   string   `json:"title"`
				Details struct {
					Items []struct {
						Node struct {
							Snippet string `json:"snippet"`
						} `json:"node"`
					} `json:"items"`
				} `json:"details"`
			} `json:"audits"`
		}
		if err := json.Unmarshal(out, &report); err != nil {
			t.Fatalf("lighthouse on %s: %v", page, err)
		}
		if !strings.Contains(report.FinalURL, "/console/") || strings.Contains(report.FinalURL, "/console/login") {
			t.Fatalf("lighthouse on %s ended at %s: not signed in", page, report.FinalURL)
		}
		score := report.Categories.Accessibility.Score * 100
		var failed []string
		for id, a := range report.Audits {
			if a.Score != nil && *a.Score < 1 {
				// The audit and the first elements it names.
				what := id
				for i, item := range a.Details.Items {
					if i == 3 {
						break
					}
					what += " " + item.Node.Snippet
				}
				failed = append(failed, what)
			}
		}
		slices.Sort(failed)
		t.Logf("%3.0f %s %v", score, idInPath.ReplaceAllString(page, ":id"), failed)
		if score < 98 {
			t.Errorf("%s scores %.0f for accessibility on a phone, want at least 98: %v", page, score, failed)
		}
	}
}
