package main

import (
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// run starts toxic on a fresh stub between in and out, as toxiproxy does
// for a connection, and returns the stub.
func run(toxic toxics.Toxic, in, out chan *stream.StreamChunk) *toxics.ToxicStub {
	stub := toxics.NewToxicStub(in, out)
	if s, ok := toxic.(toxics.StatefulToxic); ok {
		stub.State = s.NewState()
	}
	go stub.Run(&toxics.ToxicWrapper{Toxic: toxic, Toxicity: 1})
	return stub
}

// interrupted reports whether stub.InterruptToxic returned within d.
func interrupted(stub *toxics.ToxicStub, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		stub.InterruptToxic()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func chunk(b string) *stream.StreamChunk {
	return &stream.StreamChunk{Data: []byte(b), Timestamp: time.Now()}
}

// TestSlowCanBeInterruptedWhileNothingReadsWhatItSends is the case that
// hangs toxiproxy's latency toxic: the connection's writer has stopped
// reading, so the toxic's send never completes, and a change to the
// proxy's toxics waits on it for ever. slow returns, and its next run
// sends the chunk it held before any other, so the stream loses nothing.
func TestSlowCanBeInterruptedWhileNothingReadsWhatItSends(t *testing.T) {
	in, out := make(chan *stream.StreamChunk, 8), make(chan *stream.StreamChunk)
	stub := run(&Slow{Latency: 0}, in, out)
	in <- chunk("a")
	in <- chunk("b")
	time.Sleep(50 * time.Millisecond) // slow now holds "a", and nothing takes it
	if !interrupted(stub, 5*time.Second) {
		t.Fatal("slow did not return from its interrupt while its output was not read")
	}

	go stub.Run(&toxics.ToxicWrapper{Toxic: &Slow{Latency: 0}, Toxicity: 1})
	in <- chunk("c")
	var got string
	for range 3 {
		select {
		case c := <-out:
			got += string(c.Data)
		case <-time.After(5 * time.Second):
			t.Fatalf("after the interrupt the next run passed on %q, want \"abc\"", got)
		}
	}
	if got != "abc" {
		t.Fatalf("the next run passed on %q, want \"abc\": the held chunk first, nothing lost", got)
	}
}

// TestToxiproxysLatencyToxicCannotBeInterruptedThere is the control: the
// same interrupt on toxiproxy's own latency toxic does not return, which
// is why the harness uses slow.
func TestToxiproxysLatencyToxicCannotBeInterruptedThere(t *testing.T) {
	in, out := make(chan *stream.StreamChunk, 8), make(chan *stream.StreamChunk)
	stub := run(&toxics.LatencyToxic{Latency: 0}, in, out)
	in <- chunk("a")
	time.Sleep(50 * time.Millisecond)
	if interrupted(stub, 500*time.Millisecond) {
		t.Fatal("toxiproxy's latency toxic returned from its interrupt with its output unread: the reason for slow is gone")
	}
	<-out // let it go, so the test leaves nothing blocked
}

// TestSlowDelaysEachChunkByItsLatency checks the fault itself: a chunk is
// passed on no sooner than the latency after it was read, and the latency
// set by a change applies to what is still waiting.
func TestSlowDelaysEachChunkByItsLatency(t *testing.T) {
	in, out := make(chan *stream.StreamChunk, 8), make(chan *stream.StreamChunk, 8)
	run(&Slow{Latency: 150}, in, out)
	sent := chunk("a")
	in <- sent
	c := <-out
	if waited := time.Since(sent.Timestamp); waited < 150*time.Millisecond {
		t.Fatalf("the chunk came through after %s, want at least 150ms", waited)
	}
	if string(c.Data) != "a" {
		t.Fatalf("passed on %q, want \"a\"", c.Data)
	}

	stub := run(&Slow{Latency: 10_000}, in, out)
	in <- chunk("b")
	time.Sleep(50 * time.Millisecond)
	if !interrupted(stub, 5*time.Second) {
		t.Fatal("slow did not return from its interrupt while it waited")
	}
	go stub.Run(&toxics.ToxicWrapper{Toxic: &Slow{Latency: 0}, Toxicity: 1})
	select {
	case c := <-out:
		if string(c.Data) != "b" {
			t.Fatalf("passed on %q, want \"b\"", c.Data)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("with its latency set to 0 the waiting chunk was not passed on")
	}
}
