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

// standInFrontend is an HTTP/2 server that answers every gRPC call
// "unimplemented" (so a dial gives up) and sends each request it is sent
// to the returned channel, as long as the channel has room.
func standInFrontend(t *testing.T) (*http.Server, <-chan *http.Request) {
	t.Helper()
	got := make(chan *http.Request, 16)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r:
		default:
		}
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("Grpc-Status", "12") // unimplemented: the dial gives up
		w.WriteHeader(http.StatusOK)
	}), ReadHeaderTimeout: 5 * time.Second}
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	srv.Protocols = &protocols
	t.Cleanup(func() { _ = srv.Close() })
	return srv, got
}

// grpcEncoding dials a stand-in frontend with opts and returns the
// grpc-encoding header of the first request the client sends (the
// system-info call every dial makes).
func grpcEncoding(t *testing.T, opts client.Options) string {
	t.Helper()
	srv, got := standInFrontend(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	opts.HostPort = ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c, err := client.DialContext(ctx, opts); err == nil {
		c.Close()
	}
	select {
	case r := <-got:
		return r.Header.Get("Grpc-Encoding")
	case <-ctx.Done():
		t.Fatal("the client sent no request")
		return ""
	}
}

// The service's Temporal client sends its requests uncompressed; the
// same client with the SDK's default compression gzips them, so the
// stand-in frontend would see it.
func TestTheTemporalClientSendsItsRequestsUncompressed(t *testing.T) {
	opts := temporalOptions(config.Config{TemporalNamespace: "default"}, zap.NewNop(), nil, callsWait)
	if enc := grpcEncoding(t, opts); enc != "" {
		t.Fatalf("the client's request was sent with grpc-encoding %q, want none", enc)
	}
	opts.ConnectionOptions.GrpcCompression = &client.GrpcCompressionGzip{}
	if enc := grpcEncoding(t, opts); enc != "gzip" {
		t.Fatalf("with the SDK's gzip the request's grpc-encoding was %q: the stand-in frontend does not see compression", enc)
	}
}
