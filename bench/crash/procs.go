package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
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

// serve answers HTTP with h on a free loopback port and returns its base
// URL and a function that closes it.
func serve(h http.Handler) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return "http://" + l.Addr().String(), func() { _ = srv.Close() }, nil
}

// workerProc is a running `commerce worker`.
type workerProc struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	exitErr error
}

// startWorker runs `commerce worker` with env, its output in logPath, and
// waits until it has started polling its task queue.
func startWorker(ctx context.Context, bin string, env []string, logPath string) (*workerProc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	w := &workerProc{cmd: exec.Command(bin, "worker"), logPath: logPath, exited: make(chan struct{})}
	w.cmd.Env = append(os.Environ(), env...)
	w.cmd.Stdout, w.cmd.Stderr = logFile, logFile
	if err := w.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		w.exitErr = w.cmd.Wait()
		logFile.Close()
		close(w.exited)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if b, _ := os.ReadFile(logPath); bytes.Contains(b, []byte("worker started")) {
			return w, nil
		}
		select {
		case <-w.exited:
			return nil, fmt.Errorf("commerce worker exited before it started (%v):\n%s", w.exitErr, w.logTail(20))
		case <-ctx.Done():
			w.kill()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			w.kill()
			return nil, fmt.Errorf("commerce worker had not started after 2 minutes:\n%s", w.logTail(20))
		}
	}
}

func (w *workerProc) pid() int { return w.cmd.Process.Pid }

// kill sends SIGKILL and waits until the process is gone: no drain, no
// deferred call, no flush.
func (w *workerProc) kill() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
}

// stop asks the worker to stop (SIGTERM, which drains its activities) and
// kills it when it has not stopped within a minute.
func (w *workerProc) stop() {
	select {
	case <-w.exited:
		return
	default:
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(time.Minute):
		w.kill()
	}
}

func (w *workerProc) logTail(n int) string {
	b, _ := os.ReadFile(w.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
