package cli

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/internal/config"
)

// frontendLater returns an address where nothing listens yet, and a
// function that starts a stand-in frontend there; the channel receives
// each request the stand-in is sent.
func frontendLater(t *testing.T) (string, func(), <-chan *http.Request) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	srv, got := standInFrontend(t)
	start := func() {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen again on %s: %v", addr, err)
			return
		}
		go func() { _ = srv.Serve(ln) }()
	}
	return addr, start, got
}

// A worker's client made while its frontend is away waits for the
// connection and sends its request once the frontend is up, instead of
// failing at once; the API's client fails at once, so the stand-in,
// started afterwards, sees nothing from it.
func TestAWorkersCallsWaitForTheConnectionAndTheAPIsFailAtOnce(t *testing.T) {
	for _, calls := range []connectionCalls{callsWait, callsFailAtOnce} {
		addr, start, got := frontendLater(t)
		opts := temporalOptions(config.Config{TemporalNamespace: "default"}, zap.NewNop(), nil, calls)
		opts.HostPort = addr
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		dialed := make(chan error, 1)
		began := time.Now()
		go func() {
			c, err := client.DialContext(ctx, opts)
			if err == nil {
				c.Close()
			}
			dialed <- err
		}()
		// The client has tried and failed to connect before the stand-in
		// is up.
		time.Sleep(1500 * time.Millisecond)
		start()
		err := <-dialed
		cancel()
		select {
		case <-got:
			if calls == callsFailAtOnce {
				t.Fatalf("the API's client sent its request after %s, once the frontend was up: it did not fail at once", time.Since(began))
			}
		default:
			if calls == callsWait {
				t.Fatalf("the worker's client gave up (%v) before the frontend was up", err)
			}
		}
	}
}
