// Package outbound makes the HTTP requests the service sends to addresses
// its users chose (webhook receivers). It refuses private, loopback,
// link-local and other non-public addresses unless told to allow them, and
// checks the address actually dialled, after DNS resolution, so a name
// that resolves to an internal address (or starts to, later) is refused
// too.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Timeout is how long one request may take, answer included.
const Timeout = 10 * time.Second

// ErrRefusedTarget is wrapped by every refusal of an address.
var ErrRefusedTarget = errors.New("target address refused")

// Client returns the HTTP client for requests to user-chosen URLs: 10 s in
// all, no redirects followed (a 3xx is the answer), no proxy from the
// environment, and, unless allowPrivate, only public addresses.
func Client(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: Timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrRefusedTarget, address)
			}
			return checkAddr(ap.Addr())
		}
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   10,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   Timeout,
		ResponseHeaderTimeout: Timeout,
	}
	return &http.Client{
		Timeout:   Timeout,
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// CheckURL checks a URL a user gives as a target: http or https, a host,
// and (unless allowPrivate) a host that is not, and does not resolve to, a
// refused address. Requests are checked again when they are made.
func CheckURL(ctx context.Context, raw string, allowPrivate bool) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%q is not an http:// or https:// URL", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("the URL may not carry a user name or password")
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("the URL may not carry a #fragment")
	}
	if allowPrivate {
		return u, nil
	}
	host := u.Hostname()
	if addr, err := netip.ParseAddr(host); err == nil {
		return u, checkAddr(addr)
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return nil, fmt.Errorf("%w: %s is a loopback name (COMMERCE_ALLOW_PRIVATE_TARGETS=true allows it)", ErrRefusedTarget, host)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
	if err != nil {
		// An unknown name is not refused: it may resolve later. Each request
		// is checked when it is made.
		return u, nil
	}
	for _, a := range addrs {
		if err := checkAddr(a); err != nil {
			return nil, fmt.Errorf("%s resolves to %s: %w", host, a, err)
		}
	}
	return u, nil
}

// special are ranges that are neither private nor loopback by the standard
// library's reckoning but are not public either.
var special = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // shared address space (carrier-grade NAT)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("255.255.255.255/32"),
}

// checkAddr refuses an address that is not a public unicast address.
func checkAddr(a netip.Addr) error {
	a = a.Unmap()
	var kind string
	switch {
	case a.IsLoopback():
		kind = "a loopback address"
	case a.IsPrivate():
		kind = "a private address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		kind = "a link-local address"
	case a.IsUnspecified():
		kind = "the unspecified address"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		kind = "a multicast address"
	default:
		for _, p := range special {
			if p.Contains(a) {
				kind = "a reserved address"
			}
		}
	}
	if kind == "" {
		return nil
	}
	return fmt.Errorf("%w: %s is %s (COMMERCE_ALLOW_PRIVATE_TARGETS=true allows it)", ErrRefusedTarget, a, kind)
}
