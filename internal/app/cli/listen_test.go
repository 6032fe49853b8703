package cli_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
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
