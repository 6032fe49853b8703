package crash

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/procs"
)

// build compiles cmd/commerce into dir, once for every run.
func build(ctx context.Context, dir string) (string, error) {
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return "", err
	}
	return procs.Build(ctx, root, dir)
}

// proc is a running process of the run: a `commerce worker` or `commerce
// serve`, or the Temporal server.
type proc struct {
	name    string
	kind    string // api, worker or temporal: what its CPU counts as
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	exitErr error
}

// startProc runs bin with args and env, its output in logPath, and waits
// (up to wait) until ready reports it ready.
func startProc(ctx context.Context, name, bin string, args, env []string, logPath string, wait time.Duration, ready func(p *proc) bool) (*proc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, kind: kindOf(name), cmd: exec.Command(bin, args...), logPath: logPath, exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	// Gone with the harness, however it ends.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	deadline := time.Now().Add(wait)
	for {
		if ready(p) {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before it was ready (%v):\n%s", name, p.exitErr, p.logTail(20))
		case <-ctx.Done():
			p.kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("%s was not ready after %s:\n%s", name, wait, p.logTail(20))
		}
	}
}

// kindOf is what a process's CPU counts as.
func kindOf(name string) string {
	switch name {
	case "commerce serve":
		return "api"
	case "commerce worker":
		return "worker"
	}
	return "temporal"
}

// logged reports whether the process's log holds text.
func (p *proc) logged(text string) bool {
	b, _ := os.ReadFile(p.logPath)
	return strings.Contains(string(b), text)
}

// startWorker runs `commerce worker` with env, its output in logPath, and
// waits until it has started polling its task queue.
func startWorker(ctx context.Context, bin string, env []string, logPath string) (*proc, error) {
	return startProc(ctx, "commerce worker", bin, []string{"worker"}, env, logPath, 2*time.Minute,
		func(p *proc) bool { return p.logged("worker started") })
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// kill sends SIGKILL and waits until the process is gone: no drain, no
// deferred call, no flush.
func (p *proc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop asks the process to stop (SIGTERM: a worker drains its activities)
// and kills it when it has not stopped within a minute.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		p.kill()
	}
}

func (p *proc) logTail(n int) string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
