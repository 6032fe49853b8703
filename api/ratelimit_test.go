package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/cursor"
)

// burst fires n requests with key as fast as it can, spread over the
// servers, and counts the answers.
func burst(t *testing.T, servers []string, key string, n int) (ok, limited int, elapsed time.Duration) {
	t.Helper()
	var okN, limitedN atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	start := time.Now()
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				req, _ := http.NewRequest("GET", servers[i%len(servers)]+"/api/v1/products?limit=1", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case 200:
					okN.Add(1)
				case 429:
					limitedN.Add(1)
					ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
					if err != nil || ra < 1 || ra > 60 {
						t.Errorf("429 with Retry-After %q", resp.Header.Get("Retry-After"))
					}
					if strings.TrimSpace(string(body)) != `{"error":"Rate limited"}` {
						t.Errorf("429 body %s", body)
					}
				default:
					t.Errorf("status %d: %s", resp.StatusCode, body)
				}
				if resp.Header.Get("RateLimit-Policy") != `"key";q=600;w=60` || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"key";r=`) {
					t.Errorf("rate limit headers: %q %q", resp.Header.Get("RateLimit-Policy"), resp.Header.Get("RateLimit"))
				}
			}
		})
	}
	wg.Wait()
	return int(okN.Load()), int(limitedN.Load()), time.Since(start)
}

func TestRateLimitIs600AMinutePerKeyWithEvenRefill(t *testing.T) {
	f := newFixture(t)
	// A second API server with a pool of its own, as a second process would be.
	d2, err := db.Connect(context.Background(), f.db.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	srv2 := httptest.NewServer(api.New(api.Deps{DB: d2, Cursors: cursor.New([]byte("0123456789abcdef0123456789abcdef"))}).Handler())
	defer srv2.Close()

	for name, servers := range map[string][]string{
		"one server":  {f.srv.URL},
		"two servers": {f.srv.URL, srv2.URL},
	} {
		t.Run(name, func(t *testing.T) {
			key := f.newKey(domain.ScopeProductsRead)
			ok, limited, elapsed := burst(t, servers, key, 700)
			refill := int(elapsed / (100 * time.Millisecond))
			t.Logf("%d allowed, %d limited in %v (refill allows %d more)", ok, limited, elapsed, refill)
			if ok < 600 || ok > 600+refill {
				t.Fatalf("%d requests allowed; want 600 plus the refill of %v (at most %d)", ok, elapsed, 600+refill)
			}
			if ok+limited != 700 {
				t.Fatalf("%d allowed + %d limited != 700", ok, limited)
			}
			// Another key of the same organisation is unaffected.
			other := f.newKey(domain.ScopeProductsRead)
			if status, _, body := f.do("GET", "/api/v1/products", other, nil); status != 200 {
				t.Fatalf("second key: %d %s", status, body)
			}
		})
	}
}

func TestRateLimitCountsEveryRouteAndRefusalsByScope(t *testing.T) {
	f := newFixture(t)
	key := f.newKey(domain.ScopeQuotesRead)
	remaining := func(h http.Header) int {
		t.Helper()
		_, rest, ok := strings.Cut(h.Get("RateLimit"), ";r=")
		r, err := strconv.Atoi(strings.TrimSuffix(rest, ";t=1"))
		if !ok || err != nil {
			t.Fatalf("RateLimit %q", h.Get("RateLimit"))
		}
		return r
	}
	start := time.Now()
	_, hdr, _ := f.do("GET", "/api/v1/quotes", key, nil)
	first := remaining(hdr)
	_, hdr, _ = f.do("GET", "/api/v1/products", key, nil) // 403, still counted
	second := remaining(hdr)
	_, hdr, _ = f.do("GET", "/api/v1/quotes", key, nil)
	third := remaining(hdr)
	// The bucket refills one call per 100 ms: on a slow machine the calls
	// may have been given some back between them, never more.
	refilled := int(time.Since(start) / (100 * time.Millisecond))
	if first != 599 || second > 598+refilled || third > 597+refilled {
		t.Fatalf("remaining did not count down across routes: %d, %d, %d (%d refilled at most)", first, second, third, refilled)
	}
}
