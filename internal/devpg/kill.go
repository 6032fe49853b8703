package devpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Kill sends SIGKILL to the cluster's postmaster, as a crash or the OOM
// killer would: no shutdown checkpoint, the backends left to notice their
// postmaster is gone. It returns once the postmaster has exited; Restart
// brings the cluster back on the same port, through crash recovery.
func (c *Cluster) Kill() error {
	pid, err := c.postmasterPID()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill postmaster %d: %w", pid, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			return fmt.Errorf("postmaster %d still alive 30s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.started = false
	return nil
}

// PID is the postmaster's process id.
func (c *Cluster) PID() (int, error) { return c.postmasterPID() }

// Restart starts the cluster again, after Kill or Stop, on the port it had,
// so that the URLs handed out before still connect. The backends of a
// killed postmaster may hold its shared memory for a moment: the start is
// tried again until they are gone.
func (c *Cluster) Restart(ctx context.Context) error {
	if c.started {
		return errors.New("devpg: the cluster is running")
	}
	logFile := filepath.Join(filepath.Dir(c.dir), "postgres.log")
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.run(ctx, "pg_ctl", "start", "-D", c.dir, "-w", "-t", "60", "-l", logFile,
			"-o", fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=''", c.port))
		if err == nil {
			c.started = true
			return c.waitReady(ctx)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("pg_ctl start on port %d failed (see %s): %w\n%s", c.port, logFile, err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// postmasterPID reads the first line of postmaster.pid.
func (c *Cluster) postmasterPID() (int, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("devpg: no running postmaster: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, fmt.Errorf("devpg: postmaster.pid: %w", err)
	}
	return pid, nil
}
