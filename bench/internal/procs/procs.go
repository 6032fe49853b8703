// Package procs holds what the harnesses that run programs as processes
// (bench/abuse, bench/crash, and the bench runner's products harness) share:
// finding the module, building a binary, a free port and a database of
// their own.
package procs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ModuleRoot is the directory of the commerce module, wherever a harness
// is run from (the module root for go run, its package for go test).
func ModuleRoot(ctx context.Context) (string, error) {
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

// Build compiles cmd/commerce of the module at root into dir. Without
// symbols the link takes a third less time, and the harnesses need no
// debugger.
func Build(ctx context.Context, root, dir string) (string, error) {
	return BuildPackage(ctx, root, dir, "./cmd/commerce")
}

// BuildPackage compiles the command pkg (a path such as ./bench/products)
// of the module at root into dir, without symbols, and returns the
// binary's path.
func BuildPackage(ctx context.Context, root, dir, pkg string) (string, error) {
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// Database creates a database named commerce_<name>_<random> on the server
// of the URL in the environment variable env (default: the local server)
// and returns its URL and a function that drops it.
func Database(ctx context.Context, env, name string) (string, func(), error) {
	base := os.Getenv(env)
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	dbURL, drop, err := DatabaseOn(ctx, base, name)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", env, err)
	}
	return dbURL, drop, nil
}

// DatabaseOn creates a database named commerce_<name>_<random> on the
// server base connects to and returns its URL and a function that drops it.
func DatabaseOn(ctx context.Context, base, name string) (string, func(), error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, err
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	db := "commerce_" + name + "_" + RandomHex(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("create database %s: %w", db, err)
	}
	// Dropping a database waits for a checkpoint, which a busy machine can
	// take a while to finish.
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if _, err := conn.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "%s: dropping database %s: %v\n", name, db, err)
		}
		conn.Close(dctx)
	}
	u.Path = "/" + db
	return u.String(), drop, nil
}

// RandomHex is n random bytes in hex.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
