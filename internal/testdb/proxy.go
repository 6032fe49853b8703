package testdb

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy forwards TCP connections to a Postgres server, so a test can take
// the server away from the code under test and give it back: Away closes
// every connection it forwards, as the server's death or a network cut
// would, and refuses new ones until Back.
type Proxy struct {
	addr   string
	target string
	mu     sync.Mutex
	l      net.Listener
	conns  []net.Conn
}

// NewProxy listens on a free loopback port and forwards to target
// (host:port) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{addr: l.Addr().String(), target: target}
	p.serve(l)
	t.Cleanup(p.Away)
	return p
}

// Addr is the host:port to connect to instead of the server's.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(l net.Listener) {
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
			go func() { _, _ = io.Copy(in, out); _ = in.Close() }()
		}
	}()
}

// Away cuts every connection and refuses new ones.
func (p *Proxy) Away() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		_ = p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// Cut closes the connections forwarded so far and goes on accepting.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// Back accepts connections again, on the same port.
func (p *Proxy) Back(t testing.TB) {
	t.Helper()
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(l)
}

// Through is the URL u (postgres://...) with its host:port replaced by
// the proxy's.
func (p *Proxy) Through(t testing.TB, u string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil || parsed.Host == "" {
		t.Fatalf("testdb proxy: %q has no host", u)
	}
	parsed.Host = p.addr
	return parsed.String()
}

// Target is the host:port of u, for NewProxy.
func Target(t testing.TB, u string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil || parsed.Host == "" {
		t.Fatalf("testdb proxy: %q has no host", u)
	}
	return parsed.Host
}
