package cli_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/config"
)

// A process holds at most COMMERCE_MAX_CONNECTIONS connections: one more
// waits, unanswered, until one of them closes.
func TestTheListenerHoldsAtMostTheConfiguredConnections(t *testing.T) {
	l, err := cli.Listen(config.Config{MaxConnections: "2"}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = cli.ServeHTTP(ctx, l, h, zap.NewNop()) }()
	url := "http://" + l.Addr().String()
	client := func() *http.Client { return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} }
	for range 2 {
		go func() {
			if resp, err := client().Get(url + "/hold"); err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // both held
	third := make(chan error, 1)
	go func() {
		resp, err := client().Get(url + "/")
		if err == nil {
			resp.Body.Close()
		}
		third <- err
	}()
	select {
	case err := <-third:
		t.Fatalf("a third connection was served while two were held: %v", err)
	case <-time.After(time.Second):
	}
	once.Do(func() { close(release) })
	select {
	case err := <-third:
		if err != nil {
			t.Fatalf("the third connection, once one closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the third connection was not served after the others closed")
	}
	if _, err := cli.Listen(config.Config{MaxConnections: "0"}, "127.0.0.1:0"); err == nil {
		t.Fatal("a cap of 0 connections was taken")
	}
}

// The listener's connections keep their half-close: a request whose header
// is over the server's limit gets its 431, not a reset.
func TestAnOversizedHeaderIsAnswered431ThroughTheLimitedListener(t *testing.T) {
	l, err := cli.Listen(config.Config{MaxConnections: "4"}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = cli.ServeHTTP(ctx, l, http.NotFoundHandler(), zap.NewNop()) }()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		_, _ = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n"))
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a 2 MB header: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 2 MB header: %d", resp.StatusCode)
	}
}

// Connections kept alive and quiet do not lock new clients out: with the
// cap at N and N connections that each sent one request and went idle, a
// new client is served within a second (the connection idle the longest
// is closed for it), and a connection that is busy is never closed.
func TestIdleConnectionsMakeWayForANewClientAtTheCap(t *testing.T) {
	const n = 4
	l, err := cli.Listen(config.Config{MaxConnections: strconv.Itoa(n)}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-release
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = cli.ServeHTTP(ctx, l, h, zap.NewNop()) }()
	addr := l.Addr().String()
	// send writes one request on conn and reads its answer.
	send := func(conn net.Conn, r *bufio.Reader, path string) error {
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write([]byte("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			return err
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	var idle []net.Conn
	for range n {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := send(conn, bufio.NewReader(conn), "/"); err != nil {
			t.Fatal(err)
		}
		idle = append(idle, conn) // kept alive, quiet
	}
	for i := range 3 {
		start := time.Now()
		resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr + "/")
		if err != nil {
			t.Fatalf("new client %d with %d connections idle at the cap of %d: %v", i+1, n, n, err)
		}
		resp.Body.Close()
		if elapsed := time.Since(start); elapsed > time.Second {
			t.Fatalf("new client %d served after %s", i+1, elapsed)
		}
	}
	// The connections idle the longest were closed for them.
	closed := 0
	for _, conn := range idle {
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if _, err := conn.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			closed++
		}
	}
	if closed == 0 {
		t.Fatal("no idle connection was closed")
	}

	// Busy connections are not closed: with all N held in a request, a
	// new client waits.
	for range n {
		go func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			if resp, err := c.Get("http://" + addr + "/hold"); err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	waiting := make(chan error, 1)
	go func() {
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
		}
		waiting <- err
	}()
	select {
	case err := <-waiting:
		t.Fatalf("a client was served while %d requests held every place: %v", n, err)
	case <-time.After(time.Second):
	}
	once.Do(func() { close(release) })
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
