package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/commerce-integration/commerce/internal/secrets"
)

// freePorts returns n distinct free loopback ports: each listener stays
// open until all are chosen, so none is handed out twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// devState is the part of <dir>/dev.json the suite uses (internal/app/dev's
// devState).
type devState struct {
	BaseURL         string            `json:"base_url"`
	APIKey          string            `json:"api_key"`
	OrgID           string            `json:"org_id"`
	TemporalAddress string            `json:"temporal_address"`
	InboundURLs     map[string]string `json:"inbound_urls"`
	InboundTokens   map[string]string `json:"inbound_tokens"`
	// MetricsURL is the server's /metrics, on a listener apart from the API.
	MetricsURL string `json:"metrics_url"`
}

// server is a running `commerce dev`.
type server struct {
	bin     string
	dir     string
	dbURL   string
	key     string // COMMERCE_SECRET_KEY, shared with the CLI
	cmd     *exec.Cmd
	exited  chan struct{}
	exitErr error
	logPath string
	state   devState
}

// start runs `commerce dev` on free loopback ports over dbURL and waits
// until /readyz answers 200.
func start(ctx context.Context, bin, dir, dbURL string) (*server, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: filepath.Join(dir, "state"), dbURL: dbURL, key: secrets.NewServiceKey(),
		exited: make(chan struct{}), logPath: filepath.Join(dir, "server.log")}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(ports[0])
	s.cmd = exec.Command(bin, "dev", "--dir", s.dir,
		"--temporal-port", strconv.Itoa(ports[1]), "--ui-port", strconv.Itoa(ports[2]))
	s.cmd.Env = append(os.Environ(), "COMMERCE_LISTEN="+listen, "DATABASE_URL="+dbURL,
		"COMMERCE_SECRET_KEY="+s.key, "COMMERCE_LOG_FORMAT=json")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	base := "http://" + listen
	deadline := time.Now().Add(3 * time.Minute)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("commerce dev exited before it was ready (%v):\n%s", s.exitErr, s.logTail(30))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("commerce dev was not ready after 3 minutes:\n%s", s.logTail(30))
		}
	}
	b, err := os.ReadFile(filepath.Join(s.dir, "dev.json"))
	if err == nil {
		err = json.Unmarshal(b, &s.state)
	}
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("reading dev.json: %w", err)
	}
	return s, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop asks the server to stop as Ctrl-C would, and kills it when it has
// not stopped after 30 seconds.
func (s *server) stop() {
	if !s.running() {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// kill stops the server at once.
func (s *server) kill() {
	if s.running() {
		_ = s.cmd.Process.Kill()
	}
}

func (s *server) logTail(n int) string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// panics counts the panics the server logged (recovered while serving a
// request, or the one that ended it), and returns the first.
func (s *server) panics() (int, string) {
	f, err := os.Open(s.logPath)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	n, first := 0, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "panic while serving") || strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
			if n == 0 {
				first = line
			}
			n++
		}
	}
	return n, first
}

// cli runs a commerce administration command against the server's database
// and Temporal, and returns its standard output, standard error and exit
// code.
func (s *server) cli(ctx context.Context, args ...string) (stdout, stderr string, code int, err error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, s.bin, args...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+s.dbURL, "COMMERCE_SECRET_KEY="+s.key,
		"COMMERCE_BASE_URL="+s.state.BaseURL, "TEMPORAL_ADDRESS="+s.state.TemporalAddress)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(runErr, &exit):
		return out.String(), errb.String(), exit.ExitCode(), nil
	case runErr != nil:
		return out.String(), errb.String(), -1, runErr
	}
	return out.String(), errb.String(), 0, nil
}

// cliJSON runs a command with --json that must succeed, and decodes its
// output into v.
func (s *server) cliJSON(ctx context.Context, v any, args ...string) error {
	out, errOut, code, err := s.cli(ctx, append(args, "--json")...)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("commerce %s: exit %d: %s", strings.Join(args, " "), code, strings.TrimSpace(errOut))
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		return fmt.Errorf("commerce %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// memory samples the resident memory of a process from /proc/<pid>/status.
type memory struct {
	mu      sync.Mutex
	maxRSS  int64 // bytes, the largest VmRSS sampled
	hwm     int64 // bytes, the last VmHWM read (the kernel's own peak)
	guard   int64
	tripped bool
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// watchMemory samples pid every 50 ms until stopped. Past guard bytes of
// resident memory it calls kill: a server that has already gone several
// times past the budget is stopped before it takes the machine with it.
func watchMemory(pid int, guard int64, kill func()) *memory {
	m := &memory{guard: guard, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			m.sample(pid, kill)
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *memory) sample(pid int, kill func()) {
	rss, hwm, err := procMemory(pid)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxRSS = max(m.maxRSS, rss)
	m.hwm = max(m.hwm, hwm)
	if rss > m.guard && !m.tripped {
		m.tripped = true
		kill()
	}
}

// finish takes a last sample and stops sampling; later calls do nothing.
func (m *memory) finish(pid int) {
	m.once.Do(func() {
		close(m.stop)
		<-m.done
		m.sample(pid, func() {})
	})
}

func (m *memory) peak() (hwm, maxRSS int64, tripped bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hwm, m.maxRSS, m.tripped
}

// procMemory reads VmRSS and VmHWM, in bytes.
func procMemory(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		name, v, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if name == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, nil
}
