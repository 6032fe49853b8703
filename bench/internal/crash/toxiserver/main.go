// Command toxiserver is toxiproxy's server with one more toxic, slow,
// which the production-shape harness uses for its latency fault in place
// of toxiproxy's own latency toxic.
//
// toxiproxy changes a connection's toxics by interrupting the toxic that
// runs it, under the proxy's lock. Its latency toxic sends a delayed chunk
// on without listening for that interrupt, so when the connection's
// writer has stopped (the client closed the connection) and is itself
// waiting for the proxy's lock to leave, the change never finishes: the
// proxy and its API hang, and the harness's call to heal the latency
// fails. slow listens for the interrupt while it waits and while it sends,
// and keeps the chunk it holds for its next run, so nothing is lost. The
// harness puts slow on each proxy, with no latency, before any
// connection, and only ever changes its latency: it never adds or removes
// a toxic on a connection that may be busy.
package main

import (
	"flag"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

func main() {
	host := flag.String("host", "127.0.0.1", "host to listen on")
	port := flag.Int("port", 8474, "port to listen on")
	flag.Parse()

	toxics.Register("slow", new(Slow))

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-signals
		os.Exit(0)
	}()
	logger := zerolog.New(os.Stdout).With().Timestamp().Logger().Level(zerolog.InfoLevel)
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger)
	server.Listen(*host, strconv.Itoa(*port))
}

// Slow delays each chunk until Latency milliseconds after it was read,
// as toxiproxy's latency toxic does, and can be interrupted at every
// point where it waits.
type Slow struct {
	Latency int64 `json:"latency"`
}

// slowState is the chunk a run of Slow held when it was interrupted: the
// next run on the same connection sends it first.
type slowState struct {
	held *stream.StreamChunk
}

// NewState gives each connection its own place for a held chunk.
func (t *Slow) NewState() interface{} { return new(slowState) }

// GetBufferSize is the latency toxic's: chunks queue while one waits.
func (t *Slow) GetBufferSize() int { return 1024 }

// Pipe passes the stub's chunks on, each no sooner than Latency after it
// was read, and returns at once when interrupted. Latency is read once:
// toxiproxy decodes a change into the toxic in place and then interrupts
// the runs, each of which starts again with the new value.
func (t *Slow) Pipe(stub *toxics.ToxicStub) {
	latency := time.Duration(t.Latency) * time.Millisecond
	st, _ := stub.State.(*slowState)
	if st == nil {
		st = new(slowState)
		stub.State = st
	}
	for {
		if st.held == nil {
			select {
			case <-stub.Interrupt:
				return
			case c := <-stub.Input:
				if c == nil {
					stub.Close()
					return
				}
				st.held = c
			}
		}
		if wait := latency - time.Since(st.held.Timestamp); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-stub.Interrupt:
				timer.Stop()
				return
			}
		}
		select {
		case stub.Output <- st.held:
			st.held = nil
		case <-stub.Interrupt:
			return
		}
	}
}
