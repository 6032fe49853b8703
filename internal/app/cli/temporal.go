package cli

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/logging"
	"github.com/commerce-integration/commerce/internal/metrics"
	"github.com/commerce-integration/commerce/internal/tracing"
)

// ReconnectBackoff bounds the wait between the client's attempts to
// reconnect to a Temporal frontend that went away: the SDK lets it grow to
// 10 s, which a server restarted in a few seconds would add to the outage.
var ReconnectBackoff = backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

// temporalOptions are the client options of every process; with tracing
// on, the client carries the trace into the workflows it starts, and a
// worker made on it traces their runs and activities. With callsWait,
// every call made while the client is reconnecting waits for the
// connection (within the call's own deadline) instead of failing at once.
func temporalOptions(cfg config.Config, log *zap.Logger, tr *tracing.Tracing, calls connectionCalls) client.Options {
	dial := []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: ReconnectBackoff, MinConnectTimeout: MinConnectTimeout})}
	if calls == callsWait {
		dial = append(dial, grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
	}
	return client.Options{
		Interceptors: tr.Temporal(),
		HostPort:     cfg.TemporalAddress,
		Namespace:    cfg.TemporalNamespace,
		Logger:       logging.Temporal(log.Named("temporal").WithOptions(zap.IncreaseLevel(zap.WarnLevel))),
		// The SDK's series (workflow task schedule-to-start among them)
		// beside the process's own on /metrics.
		MetricsHandler: metrics.Temporal(),
		ConnectionOptions: client.ConnectionOptions{
			// Requests go to the frontend uncompressed: see
			// GrpcCompression.
			GrpcCompression:  GrpcCompression,
			KeepAliveTime:    KeepAliveTime,
			KeepAliveTimeout: KeepAliveTimeout,
			DialOptions:      dial},
	}
}

// connectionCalls is what a client's calls do while its connection to the
// frontend is being made again.
//
// A worker's calls wait for the connection (callsWait). gRPC fails a
// call at once while its connection is being made again (after a
// partition, or while the server restarts), and the SDK counts each
// poll that fails so against one back-off all of a worker's pollers
// share, from 0.2 s doubling to 10 s, which it does not let a worker
// configure. A few seconds of failed polls therefore left the pollers
// asleep for several seconds after the connection was back. A call that
// waits instead goes out the moment the connection is ready, as does the
// relay's start of a delivery, which would otherwise wait for its own
// retry. The client of commerce serve keeps failing at once, so that a
// request made while Temporal is away is answered without waiting for it
// (callsFailAtOnce; commerce dev's one process talks to the server it
// embeds).
type connectionCalls int

const (
	callsWait connectionCalls = iota
	callsFailAtOnce
)

// GrpcCompression is how the client's requests to the Temporal frontend
// are compressed: not at all. The SDK gzips every request by default, and
// under load calls often found the compressor's pool empty and made a new
// flate writer: in the production-shape harness that was 12-20% of the
// bytes an API process allocated and 2-6% of a worker's, with CPU on the
// server that inflates each request too, for requests of a few kilobytes
// on the network next to the cluster.
var GrpcCompression client.GrpcCompression = &client.GrpcCompressionNone{}

// The client's connection to the frontend is checked, and given up, much
// sooner than the SDK's defaults (a ping after 30 s without a read, 15 s
// for its answer, 20 s for a connection attempt), for a network that drops
// packets without closing anything. A worker's long polls sent into such a
// partition are lost with no error: its pollers wait out their minute-long
// deadline while the connection looks open. With a ping 10 s after the
// last read (the frontend's frontend.keepAliveMinTime, the most often it
// lets a client ping) and 3 s for its answer, the worker drops the
// connection 13 s into a partition and dials again; an attempt that is
// not answered in 2 s is given up and made again (after ReconnectBackoff),
// so the first attempt after the network heals starts within 4 s of it and
// the pollers poll on the new connection.
const (
	KeepAliveTime     = 10 * time.Second
	KeepAliveTimeout  = 3 * time.Second
	MinConnectTimeout = 2 * time.Second
)

// DialTemporal connects to Temporal, retrying while it is not up yet (in a
// compose stack the server starts after the service) until ctx ends.
func DialTemporal(ctx context.Context, cfg config.Config, log *zap.Logger, tr *tracing.Tracing) (client.Client, error) {
	delay := 500 * time.Millisecond
	for {
		c, err := client.DialContext(ctx, temporalOptions(cfg, log, tr, callsWait))
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddress, err)
		}
		log.Warn("Temporal not reachable yet; retrying", zap.String("address", cfg.TemporalAddress), zap.Error(err))
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddress, err)
		case <-time.After(delay):
		}
		delay = min(delay*2, 10*time.Second)
	}
}
