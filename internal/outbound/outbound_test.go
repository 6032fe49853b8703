package outbound

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
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

// NAT64 and 6to4 addresses are judged by the IPv4 address they carry;
// Teredo addresses are refused whatever they carry.
func TestCheckAddrJudgesTranslatedAddressesByTheirIPv4AndRefusesTeredo(t *testing.T) {
	for _, c := range []struct {
		addr    string
		refused bool
		kind    string
	}{
		{"64:ff9b::7f00:1", true, "loopback address (127.0.0.1, translated)"},
		{"64:ff9b::10.1.2.3", true, "private address (10.1.2.3, translated)"},
		{"64:ff9b::169.254.169.254", true, "link-local address (169.254.169.254, translated)"},
		{"64:ff9b::100.64.0.1", true, "reserved address (100.64.0.1, translated)"},
		{"64:ff9b::8.8.8.8", false, ""},
		{"2002:7f00:1::1", true, "loopback address (127.0.0.1, translated)"},
		{"2002:c0a8:101::1", true, "private address (192.168.1.1, translated)"},
		{"2002:a9fe:a9fe::", true, "link-local address (169.254.169.254, translated)"},
		{"2002:808:808::1", false, ""},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true, "reserved address"},
		{"2001::1", true, "reserved address"},
		{"2001:4860:4860::8888", false, ""}, // next to Teredo, but public
		{"::ffff:64.255.155.0", false, ""},
	} {
		err := checkAddr(netip.MustParseAddr(c.addr))
		if (err != nil) != c.refused {
			t.Errorf("%s: %v, refused should be %v", c.addr, err, c.refused)
			continue
		}
		if err != nil && (!errors.Is(err, ErrRefusedTarget) || !strings.Contains(reasonOf(err), c.kind)) {
			t.Errorf("%s: %q, want ErrRefusedTarget naming %q", c.addr, err, c.kind)
		}
	}
}

// Whatever way a request fails, the text kept of it names the target by
// scheme://host[:port] only: never the path or query, which may carry the
// receiver's credentials.
func TestDescribeNamesOnlyTheOriginOfTheTarget(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedAddr := closed.Listener.Addr().String()
	closed.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { time.Sleep(300 * time.Millisecond) }))
	defer slow.Close()
	short := Client(AnyTarget)
	short.Timeout = 50 * time.Millisecond
	for _, c := range []struct {
		name   string
		client *http.Client
		url    string
		want   string
	}{
		{"refused address", Client(PublicTargets), "https://127.0.0.1/hook?token=SECRET", "target address refused: the host is, or resolves to, a non-public address"},
		{"connection refused", Client(AnyTarget), "http://" + closedAddr + "/hooks/SECRET/x?token=SECRET", `Post "http://` + closedAddr + `": dial tcp`},
		{"no answer", short, slow.URL + "/hook?token=SECRET", "no answer within 10 s"},
		{"unknown host", Client(AnyTarget), "https://h.invalid/hook?token=SECRET", `Post "https://h.invalid": `},
	} {
		req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader("{}"))
		resp, err := c.client.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: no error", c.name)
		}
		got := Describe(err)
		if strings.Contains(got, "SECRET") || strings.Contains(got, "/hook") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to contain %q and nothing of the path or query", c.name, got, c.want)
		}
	}
	for raw, want := range map[string]string{
		"https://h.example/hook?token=SECRET":      "https://h.example",
		"https://h.example:8443/a/SECRET":          "https://h.example:8443",
		"http://[2606:4700::1]:81/x?k=SECRET":      "http://[2606:4700::1]:81",
		"https://u:SECRET@h.example/x":             "https://h.example",
		"https://h.example/hook?token=SECRET\x7f%": "(the URL is not valid)",
	} {
		if got := Origin(raw); got != want {
			t.Errorf("Origin(%q) = %q, want %q", raw, got, want)
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
		_, err := CheckURL(ctx, raw, PublicTargets)
		if err == nil || !strings.Contains(err.Error(), want) && !strings.Contains(reasonOf(err), want) {
			t.Errorf("%s: %v, want an error mentioning %q", raw, err, want)
		}
	}
	if _, err := CheckURL(ctx, "https://8.8.8.8/hook", PublicTargets); err != nil {
		t.Errorf("a public address: %v", err)
	}
	if _, err := CheckURL(ctx, "http://127.0.0.1:9000/hook", AnyTarget); err != nil {
		t.Errorf("loopback when allowed: %v", err)
	}
}

func TestClientChecksTheDialledAddress(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits++ }))
	defer srv.Close()
	if _, err := Client(PublicTargets).Get(srv.URL); err == nil || !errors.Is(err, ErrRefusedTarget) {
		t.Fatalf("loopback receiver reached: %v", err)
	}
	if hits != 0 {
		t.Fatal("the refused request reached the receiver")
	}
	resp, err := Client(AnyTarget).Get(srv.URL)
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
	c := Client(AnyTarget)
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

// Creation refuses what a delivery would refuse, whatever form the address
// takes, and says so without naming the address or how the host resolved:
// the forms resolvers read as addresses (all digits, hex, short or octal
// IPv4), a trailing dot, IPv4-compatible IPv6 and every IPv6 outside
// 2000::/3, names of one label and reserved names.
func TestCheckURLRefusesEveryFormOfANonPublicAddressWithoutNamingIt(t *testing.T) {
	ctx := context.Background()
	for _, raw := range []string{
		"http://2130706433/", "http://0x7f000001/", "http://0x7F.0.0.1/", "http://127.1/", "http://0177.0.0.1/",
		"http://localhost./", "http://127.0.0.1./", "http://[::127.0.0.1]/", "http://[::7f00:1]/",
		"http://[fc00::1]/", "http://[fe80::1]/", "http://[ff02::1]/", "http://[100::1]/", "http://[::]/",
		"http://metadata.google.internal/computeMetadata/v1/", "http://printer.local/", "http://nas.home.arpa/",
		"http://vm/", "http://metadata/", "http://a.localhost/",
	} {
		_, err := CheckURL(ctx, raw, PublicTargets)
		var refused *RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("%s: %v, want refused", raw, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "127.") || strings.Contains(msg, "::") || strings.Contains(msg, "resolves to ") ||
			!strings.Contains(msg, "non-public address") {
			t.Errorf("%s: %q names what it should not, or not what it should", raw, msg)
		}
	}
	for _, raw := range []string{"https://8.8.8.8/h", "https://[2606:4700:4700::1111]/h", "https://[64:ff9b::808:808]/h"} {
		if _, err := CheckURL(ctx, raw, PublicTargets); err != nil {
			t.Errorf("%s: %v, want it allowed", raw, err)
		}
	}
}

// Loopback targets (commerce dev) allow loopback addresses and names, and
// nothing else that is not public; public targets refuse loopback too.
func TestLoopbackTargetsAllowLoopbackOnly(t *testing.T) {
	ctx := context.Background()
	for raw, allowed := range map[string]bool{
		"http://127.0.0.1:9000/h": true, "http://[::1]/h": true, "http://localhost:9000/h": true,
		"http://10.0.0.5/h": false, "http://169.254.169.254/latest": false, "http://192.168.1.1/h": false,
		"http://[fc00::1]/h": false, "https://8.8.8.8/h": true,
	} {
		if _, err := CheckURL(ctx, raw, LoopbackTargets); (err == nil) != allowed {
			t.Errorf("%s with loopback targets: %v, allowed should be %v", raw, err, allowed)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	resp, err := Client(LoopbackTargets).Get(srv.URL)
	if err != nil {
		t.Fatalf("a loopback receiver with loopback targets: %v", err)
	}
	resp.Body.Close()
	if _, err := Client(PublicTargets).Get(srv.URL); !errors.Is(err, ErrRefusedTarget) {
		t.Fatalf("a loopback receiver with public targets: %v", err)
	}
	for s, want := range map[string]Targets{"": PublicTargets, "false": PublicTargets, "loopback": LoopbackTargets, "true": AnyTarget} {
		if got, err := ParseTargets(s); err != nil || got != want {
			t.Errorf("ParseTargets(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseTargets("sometimes"); err == nil {
		t.Error("ParseTargets took an unknown value")
	}
}

// An attempt's error names neither the address a host resolved to nor the
// resolver it asked.
func TestDescribeNamesNoResolverOrAddress(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "https://h.invalid/x", Err: &net.DNSError{Err: "no such host", Name: "h.invalid", Server: "10.255.255.53:53"}}
	if got := Describe(err); strings.Contains(got, "10.255.255.53") || got != `Post "https://h.invalid": lookup h.invalid: no such host` {
		t.Fatalf("%q", got)
	}
	dial := &url.Error{Op: "Post", URL: "https://h.example/x", Err: &net.OpError{Op: "dial", Net: "tcp",
		Addr: &net.TCPAddr{IP: net.ParseIP("93.184.216.34"), Port: 443}, Err: errors.New("connect: connection refused")}}
	if got := Describe(dial); strings.Contains(got, "93.184") || got != `Post "https://h.example": dial tcp: connect: connection refused` {
		t.Fatalf("%q", got)
	}
}

// A host is normalised as the HTTP client reads it (IDNA's lookup mapping)
// before it is judged, at creation and at connection: full-width digits
// and letters, ideographic and full-width full stops are the ASCII address
// or name they reach, and are refused as it is; the URL kept carries the
// normalised host.
func TestHostsAreNormalisedBeforeTheyAreJudged(t *testing.T) {
	ctx := context.Background()
	spellings := []string{
		"http://１２７.0.0.1/", "http://127。0.0.1/", "http://127．0．0．1/", "http://127｡0｡0｡1/", "http://１２７。０。０。１:8080/h",
		"http://０ｘ７ｆ０００００１/", "http://ｌｏｃａｌｈｏｓｔ/", "http://ＬＯＣＡＬＨＯＳＴ/", "http://metadata.google。internal/",
		"http://１０.0.0.1/", "http://169.254.169.254。/",
	}
	for _, raw := range spellings {
		_, err := CheckURL(ctx, raw, PublicTargets)
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "non-public address") {
			t.Errorf("%s: %v, want refused as a non-public address", raw, err)
		}
	}
	for raw, want := range map[string]string{
		"http://１２７.0.0.1:9000/h?x=1": "http://127.0.0.1:9000/h?x=1",
		"http://127。0.0.1/":           "http://127.0.0.1/",
		"https://bücher.example/h":    "https://xn--bcher-kva.example/h",
		"https://ERP.example.com/h":   "https://ERP.example.com/h",
		"http://[::1]:9000/h":         "http://[::1]:9000/h",
	} {
		u, err := CheckURL(ctx, raw, AnyTarget)
		if err != nil || u.String() != want {
			t.Errorf("%s: kept as %v (%v), want %s", raw, u, err, want)
		}
	}
	if _, err := CheckURL(ctx, "http://a\u00adb\u200d.example/", PublicTargets); err == nil {
		// IDNA maps a soft hyphen away; a zero-width joiner out of context is refused.
		t.Error("a host IDNA refuses was accepted")
	}

	// At connection: the request is judged by its normalised host before
	// it is sent, and goes to it.
	var hosts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hosts = append(hosts, r.Host) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	for _, host := range []string{"１２７.0.0.1", "127。0.0.1"} {
		if _, err := Client(PublicTargets).Get("http://" + host + ":" + port + "/h"); !errors.Is(err, ErrRefusedTarget) {
			t.Errorf("%s with public targets: %v, want refused", host, err)
		}
		resp, err := Client(LoopbackTargets).Get("http://" + host + ":" + port + "/h")
		if err != nil {
			t.Fatalf("%s with loopback targets: %v", host, err)
		}
		resp.Body.Close()
	}
	if len(hosts) != 2 || hosts[0] != "127.0.0.1:"+port || hosts[1] != hosts[0] {
		t.Fatalf("the receiver was sent hosts %q", hosts)
	}
}
