// Command abuse sends a running `commerce dev` what an attacker or a careless
// client would, and checks that every answer is one the design allows:
// never a 500, never over 64 KB, always {"error": "..."} when refused, and
// that nothing happens that should not (no order cancelled by a replay, no
// good row lost beside a bad one, no series added to /metrics per request).
//
//	go run ./bench/abuse [-size small|full] [-clients 4]
//
// It builds the commerce binary, makes a fresh database on 127.0.0.1:5432
// (ABUSE_DATABASE_URL names another server; the database is dropped
// afterwards), starts `commerce dev` on free loopback ports, and sends every
// check with -clients clients at once while it samples the server's resident
// memory. It prints one table and exits 1 when any check failed. docs/security.md
// lists what it sends.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	size := flag.String("size", "small", "small (every check at least once, about a minute) or full (the limit-size bodies from every client, several rounds)")
	clients := flag.Int("clients", 4, "clients sending at once")
	flag.Parse()
	sz, err := ParseSize(*size)
	if err != nil || *clients < 1 {
		fmt.Fprintln(os.Stderr, "usage: abuse [-size small|full] [-clients N]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, Options{Size: sz, Clients: *clients, Out: os.Stdout})
	if err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(2)
	}
	if rep.Failed() {
		os.Exit(1)
	}
}
