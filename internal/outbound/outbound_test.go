package outbound

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestCheckAddrRefusesWhatIsNotPublic(t *testing.T) {
	for addr, refused := range map[string]bool{
		"127.0.0.1": true, "::1": true, "10.1.2.3": true, "172.16.0.1": true, "192.168.1.1": true,
		"169.254.169.254": true, "fe80::1": true, "fc00::1": true, "0.0.0.0": true, "::": true,
		"100.64.0.1": true, "224.0.0.1": true, "::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true,
		"8.8.8.8": false, "1.1.1.1": false, "2606:4700:4700::1111": false, "93.184.216.34": false,
	} {
		err := checkAddr(netip.MustParseAddr(addr))
		if (err != nil) != refused {
			t.Errorf("%s: %v, refused should be %v", addr, err, refused)
		}
		if err != nil && !errors.Is(err, ErrRefusedTarget) {
			t.Errorf("%s: %v does not wrap ErrRefusedTarget", addr, err)
		}
	}
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	for raw, want := range map[string]string{
		"ftp://example.com/x":           "not an http",
		"https://":                      "not an http",
		"example.com/hook":              "not an http",
		"https://u:p@example.com/hook":  "user name",
		"https://example.com/hook#frag": "fragment",
		"http://127.0.0.1:9000/hook":    "loopback",
		"http://[::1]/hook":             "loopback",
		"http://localhost:8080/hook":    "loopback name",
		"http://169.254.169.254/latest": "link-local",
		"https://10.0.0.5/hook":         "private",
	} {
		if _, err := CheckURL(ctx, raw, false); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error mentioning %q", raw, err, want)
		}
	}
	if _, err := CheckURL(ctx, "https://8.8.8.8/hook", false); err != nil {
		t.Errorf("a public address: %v", err)
	}
	if _, err := CheckURL(ctx, "http://127.0.0.1:9000/hook", true); err != nil {
		t.Errorf("loopback when allowed: %v", err)
	}
}

func TestClientChecksTheDialledAddress(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits++ }))
	defer srv.Close()
	if _, err := Client(false).Get(srv.URL); err == nil || !errors.Is(err, ErrRefusedTarget) {
		t.Fatalf("loopback receiver reached: %v", err)
	}
	if hits != 0 {
		t.Fatal("the refused request reached the receiver")
	}
	resp, err := Client(true).Get(srv.URL)
	if err != nil {
		t.Fatalf("allowed: %v", err)
	}
	resp.Body.Close()
	if hits != 1 {
		t.Fatalf("%d hits, want 1", hits)
	}
}

func TestClientFollowsNoRedirectAndWaits10Seconds(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	c := Client(true)
	resp, err := c.Get(srv.URL + "/moved")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("redirect followed: %d", resp.StatusCode)
	}
	if c.Timeout != 10*time.Second {
		t.Fatalf("timeout %v", c.Timeout)
	}
}
