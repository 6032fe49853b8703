package devtemporal

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
)

func TestFreePortsNeverHandsOutAPortTwiceInOneProcess(t *testing.T) {
	// Servers starting side by side each take nine ports; every port must be
	// one no other caller in the process was given, even once the first
	// caller has released its check listeners and not yet bound.
	const callers, n = 40, 9
	var (
		mu   sync.Mutex
		seen = map[int]int{}
		wg   sync.WaitGroup
	)
	for c := range callers {
		wg.Go(func() {
			ports, err := freePorts("127.0.0.1", n)
			if err != nil {
				t.Error(err)
				return
			}
			if len(ports) != n {
				t.Errorf("asked for %d ports, got %d", n, len(ports))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range ports {
				if p < 20000 || p > 32767 {
					t.Errorf("port %d is outside 20000-32767", p)
				}
				if other, dup := seen[p]; dup {
					t.Errorf("port %d handed to caller %d and caller %d", p, other, c)
				}
				seen[p] = c
			}
		})
	}
	wg.Wait()
	if len(seen) != callers*n {
		t.Fatalf("%d distinct ports for %d callers of %d", len(seen), callers, n)
	}
}

func TestFreePortsSkipsAPortAnotherListenerHolds(t *testing.T) {
	// Hold most of the range's ports the test can get, then ask: every port
	// handed out must be one that can be bound.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for p := 20000; p < 20000+2000; p++ {
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			held = append(held, l)
		}
	}
	ports, err := freePorts("127.0.0.1", 9)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Errorf("port %d was handed out but cannot be bound: %v", p, err)
			continue
		}
		_ = l.Close()
	}
}

// The child half of TestAServerFatalIsWrittenAndExitsEvenWithANopLogger.
func init() {
	if msg := os.Getenv("DEVTEMPORAL_FATAL_CHILD"); msg != "" {
		fatalsToStderr(zap.NewNop().WithOptions(zap.IncreaseLevel(zap.WarnLevel))).Fatal(msg)
		os.Exit(0) // not reached when the fatal entry exits
	}
}

func TestAServerFatalIsWrittenAndExitsEvenWithANopLogger(t *testing.T) {
	// The Temporal server reports a port it cannot bind as a fatal entry and
	// goes on only if the logger does not exit; the process must end, saying
	// why.
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DEVTEMPORAL_FATAL_CHILD=Failed to start gRPC listener")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("child ended with %v, want exit status 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "Failed to start gRPC listener") {
		t.Fatalf("the fatal entry is not in the output:\n%s", out)
	}
}

func TestFatalsToStderrKeepsALoggerThatAlreadyWritesFatals(t *testing.T) {
	logger := zap.NewExample()
	if got := fatalsToStderr(logger); got != logger {
		t.Fatal("a logger that writes fatal entries was wrapped")
	}
	if !fatalsToStderr(zap.NewNop()).Core().Enabled(zap.FatalLevel) {
		t.Fatal("a nop logger still drops fatal entries")
	}
}
