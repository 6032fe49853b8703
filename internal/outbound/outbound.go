// Package outbound makes the HTTP requests the service sends to addresses
// its users chose (webhook receivers). It refuses private, loopback,
// link-local and other non-public addresses unless told to allow them, and
// checks the address actually dialled, after DNS resolution, so a name
// that resolves to an internal address (or starts to, later) is refused
// too. Its error texts name a target by scheme://host[:port] only.
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
		return nil, fmt.Errorf("the URL is not an http:// or https:// URL")
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
	netip.MustParsePrefix("2001::/32"),      // Teredo: a tunnel whose far end no address names
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("255.255.255.255/32"),
}

// Addresses that stand for an IPv4 address: NAT64 (the IPv4 address is the
// last 32 bits) and 6to4 (bits 16 to 48). A DNS64 resolver answers public
// IPv4-only hosts with NAT64 addresses, so these are judged by the IPv4
// address they carry, which is where the request ends up.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 returns the IPv4 address a NAT64 or 6to4 address stands for.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// checkAddr refuses an address that is not a public unicast address, or
// that stands for an IPv4 address that is not.
func checkAddr(a netip.Addr) error {
	a = a.Unmap()
	kind := addrKind(a)
	if v4, ok := embeddedIPv4(a); ok && kind == "" {
		if k := addrKind(v4); k != "" {
			kind = fmt.Sprintf("%s (%s, translated)", k, v4)
		}
	}
	if kind == "" {
		return nil
	}
	return fmt.Errorf("%w: %s is %s (COMMERCE_ALLOW_PRIVATE_TARGETS=true allows it)", ErrRefusedTarget, a, kind)
}

// addrKind names what kind of non-public address a is, or is empty for a
// public unicast address.
func addrKind(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsPrivate():
		return "a private address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "a link-local address"
	case a.IsUnspecified():
		return "the unspecified address"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, p := range special {
		if p.Contains(a) {
			return "a reserved address"
		}
	}
	return ""
}

// Origin is the scheme://host[:port] of a URL: all of it that an error text,
// a log line or an attempt log may name, since a URL's path and query can
// carry the receiver's credentials.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(the URL is not valid)"
	}
	return u.Scheme + "://" + u.Host
}

// Describe says why a request to a user-chosen URL failed, without Go's
// wrapping and naming the target by its Origin only.
func Describe(err error) string {
	switch {
	case errors.Is(err, ErrRefusedTarget):
		msg := err.Error()
		if i := strings.Index(msg, ErrRefusedTarget.Error()); i >= 0 {
			return msg[i:]
		}
		return ErrRefusedTarget.Error()
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return "no answer within 10 s"
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return "the request could not be sent"
	}
	return fmt.Sprintf("%s %q: %s", ue.Op, Origin(ue.URL), withoutURL(ue.Err.Error(), ue.URL))
}

// withoutURL removes from msg the parts of raw past its origin, in case an
// error below the HTTP client quoted them.
func withoutURL(msg, raw string) string {
	msg = strings.ReplaceAll(msg, raw, Origin(raw))
	u, err := url.Parse(raw)
	if err != nil {
		return msg
	}
	for _, part := range []string{u.RawQuery, u.Query().Encode(), u.EscapedPath(), u.Path, u.User.String()} {
		if len(part) > 1 {
			msg = strings.ReplaceAll(msg, part, "[redacted]")
		}
	}
	return msg
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
