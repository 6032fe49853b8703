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
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Timeout is how long one request may take, answer included.
const Timeout = 10 * time.Second

// ErrRefusedTarget is wrapped by every refusal of an address.
var ErrRefusedTarget = errors.New("target address refused")

// RefusedError is the refusal of a target. Its message never names the
// address, the host's resolution or the resolver, which would tell a caller
// about the service's network; Reason says, for the log, what was refused
// and why.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string { return ErrRefusedTarget.Error() + ": " + nonPublic }

// Unwrap makes a refusal ErrRefusedTarget.
func (e *RefusedError) Unwrap() error { return ErrRefusedTarget }

// refusal is a RefusedError with its reason.
func refusal(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// Targets says which addresses requests to user-chosen URLs may reach.
type Targets int

const (
	// PublicTargets: public unicast addresses only (production).
	PublicTargets Targets = iota
	// LoopbackTargets: public addresses and loopback, nothing else private
	// (commerce dev, whose receivers run on the same machine).
	LoopbackTargets
	// AnyTarget: every address (COMMERCE_ALLOW_PRIVATE_TARGETS=true).
	AnyTarget
)

// ParseTargets reads COMMERCE_ALLOW_PRIVATE_TARGETS: false (public only),
// loopback, or true (any address).
func ParseTargets(s string) (Targets, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "false", "0", "no":
		return PublicTargets, nil
	case "loopback":
		return LoopbackTargets, nil
	case "true", "1", "yes":
		return AnyTarget, nil
	}
	return PublicTargets, fmt.Errorf("COMMERCE_ALLOW_PRIVATE_TARGETS %q is not false, loopback or true", s)
}

// String is the setting's value (ParseTargets reads it back).
func (t Targets) String() string {
	switch t {
	case LoopbackTargets:
		return "loopback"
	case AnyTarget:
		return "true"
	}
	return "false"
}

// allows reports whether t lets a request reach a.
func (t Targets) allows(a netip.Addr) error {
	switch {
	case t == AnyTarget:
		return nil
	case t == LoopbackTargets && a.Unmap().IsLoopback():
		return nil
	}
	return checkAddr(a)
}

// Client returns the HTTP client for requests to user-chosen URLs: 10 s in
// all, no redirects followed (a 3xx is the answer), no proxy from the
// environment, and only the addresses targets allows, checked on every
// connection after DNS resolution.
func Client(targets Targets) *http.Client {
	dialer := &net.Dialer{Timeout: Timeout, KeepAlive: 30 * time.Second}
	if targets != AnyTarget {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return refusal("%s is not an address", address)
			}
			return targets.allows(ap.Addr())
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
	c := &http.Client{
		Timeout:   Timeout,
		Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	if targets != AnyTarget {
		c.Transport = checkedHosts{targets: targets, next: transport}
	}
	return c
}

// checkedHosts checks a request's host before it is sent, as CheckURL
// checks it at creation but without asking DNS (the dialler checks the
// address a name resolves to): normalised (IDNA), an address in any form,
// a reserved name or a name of one label is refused. A URL stored before
// creation normalised hosts is refused here as it would be made today; the
// request goes to the normalised host, the one the HTTP client would dial.
type checkedHosts struct {
	targets Targets
	next    http.RoundTripper
}

func (c checkedHosts) RoundTrip(r *http.Request) (*http.Response, error) {
	host, err := checkHost(r.Context(), r.URL.Hostname(), c.targets, false)
	if err != nil {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, err
	}
	if host != r.URL.Hostname() {
		sent := r.Clone(r.Context())
		sent.URL.Host = withPort(host, r.URL.Port())
		sent.Host = ""
		r = sent
	}
	return c.next.RoundTrip(r)
}

// nonPublic is what a refusal says of the address: never the address or
// the resolver, which would tell a caller about the service's network.
const nonPublic = "the host is, or resolves to, a non-public address (COMMERCE_ALLOW_PRIVATE_TARGETS allows it)"

// reservedNames are the suffixes of host names that name no public host:
// loopback, mDNS, private-use and documentation names.
var reservedNames = []string{"localhost", "local", "internal", "home.arpa", "localdomain", "invalid"}

// CheckURL checks a URL a user gives as a target, refusing what a request to
// it would be refused: http or https, a host, no user name or fragment,
// and, unless targets allows more, a host that is public. The host is
// normalised first as the HTTP client reads it before resolving (IDNA's
// mapping for lookup: full-width digits and letters are ASCII ones, an
// ideographic or full-width full stop a dot, capitals small), so that
// http://１２７.0.0.1/ and http://127。0.0.1/ are judged as the 127.0.0.1
// they reach; the URL returned carries the normalised host. An IP address
// must be written in its usual form (a host of digits, hex, or short or
// octal IPv4 forms is refused: resolvers read them as addresses); a name
// must have a dot, must not be a reserved name (localhost, .internal,
// .local, ...), and must not resolve to a refused address. Requests are
// checked again on every connection.
func CheckURL(ctx context.Context, raw string, targets Targets) (*url.URL, error) {
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
	host, err := checkHost(ctx, u.Hostname(), targets, true)
	if err != nil {
		return nil, err
	}
	if host != u.Hostname() {
		u.Host = withPort(host, u.Port())
	}
	return u, nil
}

// withPort is host with port, an IPv6 address in brackets.
func withPort(host, port string) string {
	if port != "" {
		return net.JoinHostPort(host, port)
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// NormalHost is host as the HTTP client dials it: a name that is not all
// ASCII is mapped and encoded by IDNA's lookup profile (UTS #46, as
// net/http applies it before resolving); an ASCII one is as it is. An
// error when IDNA refuses the name.
func NormalHost(host string) (string, error) {
	for i := range len(host) {
		if host[i] >= utf8.RuneSelf {
			ascii, err := idna.Lookup.ToASCII(host)
			if err != nil {
				return "", fmt.Errorf("the URL's host is not a valid host name")
			}
			return ascii, nil
		}
	}
	return host, nil
}

// checkHost normalises host (NormalHost) and refuses it, unless targets
// allows more, when it is not a public address or a name that may be
// one; with resolve, a name is also refused when it resolves to a refused
// address. It returns the normalised host.
func checkHost(ctx context.Context, host string, targets Targets, resolve bool) (string, error) {
	normal, err := NormalHost(host)
	if err != nil {
		return "", err
	}
	if targets == AnyTarget {
		return normal, nil
	}
	host = strings.TrimSuffix(strings.ToLower(normal), ".")
	if addr, err := netip.ParseAddr(host); err == nil {
		return normal, targets.allows(addr)
	}
	if looksNumeric(host) {
		return "", refusal("%s is an address in a form resolvers read as one", host)
	}
	if targets == LoopbackTargets && (host == "localhost" || strings.HasSuffix(host, ".localhost")) {
		return normal, nil
	}
	for _, name := range reservedNames {
		if host == name || strings.HasSuffix(host, "."+name) {
			if name == "localhost" {
				return "", refusal("%s is a loopback name", host)
			}
			return "", refusal("%s is a reserved name (%s)", host, name)
		}
	}
	if !strings.Contains(host, ".") {
		return "", refusal("%s is a name of one label, which only a local resolver answers", host)
	}
	if !resolve {
		return normal, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(rctx, "ip", host)
	if err != nil {
		// An unknown name is not refused: it may resolve later. Each request
		// is checked when it is made.
		return normal, nil
	}
	for _, a := range addrs {
		if err := targets.allows(a); err != nil {
			return "", refusal("%s resolves to %s: %s", host, a, reasonOf(err))
		}
	}
	return normal, nil
}

// looksNumeric reports whether a host that is not a usual IP address is
// still one to a resolver: every dot-separated label a decimal, octal or
// hex number (2130706433, 0x7f000001, 127.1, 0177.0.0.1).
func looksNumeric(host string) bool {
	for label := range strings.SplitSeq(host, ".") {
		digits := strings.TrimPrefix(label, "0x")
		if digits == "" {
			return false
		}
		for _, c := range digits {
			if !('0' <= c && c <= '9' || digits != label && 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
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
	return refusal("%s is %s", a, kind)
}

// Reason is what a refusal refused and why (for the log, and for an
// operator at the command line); for another error, its text.
func Reason(err error) string { return reasonOf(err) }

// reasonOf is the reason of a refusal, for the log.
func reasonOf(err error) string {
	var r *RefusedError
	if errors.As(err, &r) {
		return r.Reason
	}
	return err.Error()
}

// globalUnicast is where every public IPv6 address is (2000::/3).
var globalUnicast = netip.MustParsePrefix("2000::/3")

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
	if a.Is6() && !globalUnicast.Contains(a) && !nat64.Contains(a) {
		// Outside 2000::/3 no IPv6 address is public: the IPv4-compatible
		// ::/96 (::127.0.0.1) and the unassigned ranges among them. NAT64 is
		// judged by the IPv4 address it carries.
		return "an address outside the global unicast range"
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
// wrapping, naming the target by its Origin only, and never the address
// it resolved to or the resolver asked: `Post "https://h.example": dial tcp:
// connect: connection refused`, `... lookup h.example: no such host`.
func Describe(err error) string {
	switch {
	case errors.Is(err, ErrRefusedTarget):
		return ErrRefusedTarget.Error() + ": " + nonPublic
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return "no answer within 10 s"
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		return "the request could not be sent"
	}
	prefix := fmt.Sprintf("%s %q: ", ue.Op, Origin(ue.URL))
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return prefix + "lookup " + dns.Name + ": " + dns.Err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return prefix + "dial " + op.Net + ": " + withoutURL(op.Err.Error(), ue.URL)
	}
	return prefix + withoutURL(ue.Err.Error(), ue.URL)
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
