package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// moduleRoot is the directory of the commerce module, wherever the harness
// is run from (the module root for go run, bench/crash for go test).
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the commerce module")
	}
	return filepath.Dir(mod), nil
}

// build compiles cmd/commerce into dir, once for every run.
func build(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "commerce")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", bin, "./cmd/commerce")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/commerce: %w\n%s", err, out)
	}
	return bin, nil
}

// database creates a database of its own on the server of
// CRASH_DATABASE_URL (default: the local server) and returns its URL and a
// function that drops it.
func database(ctx context.Context) (string, func(), error) {
	base := os.Getenv("CRASH_DATABASE_URL")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("CRASH_DATABASE_URL: %w", err)
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	name := "commerce_crash_" + randomHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := conn.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "crash: dropping database %s: %v\n", name, err)
		}
		conn.Close(dctx)
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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
