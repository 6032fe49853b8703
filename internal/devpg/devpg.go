// Package devpg runs a private PostgreSQL cluster for `commerce dev`:
// initdb on first start, pg_ctl start and stop, listening on 127.0.0.1 only,
// data kept in a directory so a second start finds it.
package devpg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cluster is a running private cluster.
type Cluster struct {
	dir     string
	binDir  string
	port    int
	cred    *syscall.Credential
	started bool
}

// ErrNotInstalled means no initdb/pg_ctl could be found.
var ErrNotInstalled = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found")

// FindBinaries returns the directory holding initdb and pg_ctl: from PATH,
// else the newest of the usual install locations.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Dir(real), nil
			}
			return filepath.Dir(p), nil
		}
	}
	var candidates []string
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/opt/homebrew/opt/postgresql@*/bin",
		"/usr/local/opt/postgresql@*/bin", "/usr/local/pgsql/bin"} {
		m, _ := filepath.Glob(pattern)
		candidates = append(candidates, m...)
	}
	sort.Slice(candidates, func(i, j int) bool { return versionOf(candidates[i]) > versionOf(candidates[j]) })
	for _, c := range candidates {
		if isFile(filepath.Join(c, "pg_ctl")) && isFile(filepath.Join(c, "initdb")) {
			return c, nil
		}
	}
	return "", ErrNotInstalled
}

func versionOf(path string) int {
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r < '0' || r > '9' }) {
		if v, err := strconv.Atoi(part); err == nil {
			return v
		}
	}
	return 0
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// Start initialises the cluster in dir when it holds none, and starts it
// (or adopts it, when a previous run left it running). As root, the cluster
// runs as the "postgres" user, since PostgreSQL refuses to run as root.
func Start(ctx context.Context, dir string) (*Cluster, error) {
	binDir, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, binDir: binDir}
	if os.Geteuid() == 0 {
		if c.cred, err = unprivileged(); err != nil {
			return nil, err
		}
	}
	if !isFile(filepath.Join(dir, "PG_VERSION")) {
		if err := c.initdb(ctx); err != nil {
			return nil, err
		}
	}
	if port, ok := c.runningPort(); ok {
		c.port = port
		c.started = true
		return c, c.waitReady(ctx)
	}
	if c.port, err = c.choosePort(); err != nil {
		return nil, err
	}
	logFile := filepath.Join(filepath.Dir(dir), "postgres.log")
	if c.cred != nil {
		// The server writes its log as the unprivileged user.
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			_ = f.Close()
			_ = os.Chown(logFile, int(c.cred.Uid), int(c.cred.Gid))
		}
	}
	out, err := c.run(ctx, "pg_ctl", "start", "-D", dir, "-w", "-t", "60", "-l", logFile,
		"-o", fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=''", c.port))
	if err != nil {
		return nil, fmt.Errorf("pg_ctl start failed (see %s): %w\n%s", logFile, err, out)
	}
	c.started = true
	return c, c.waitReady(ctx)
}

// URL connects to database name in the cluster.
func (c *Cluster) URL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, name)
}

// Port is the TCP port the cluster listens on.
func (c *Cluster) Port() int { return c.port }

// Stop shuts the cluster down (fast mode: open sessions are ended).
func (c *Cluster) Stop() error {
	if !c.started {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.run(ctx, "pg_ctl", "stop", "-D", c.dir, "-m", "fast", "-w")
	if err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	c.started = false
	return nil
}

func (c *Cluster) initdb(ctx context.Context) error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return err
		}
	}
	out, err := c.run(ctx, "initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "--encoding=UTF8",
		"--locale=C", "--no-instructions")
	if err != nil {
		hint := ""
		if c.cred != nil {
			hint = fmt.Sprintf("\nPostgreSQL refuses to run as root, so the cluster runs as uid %d; that user must be able to "+
				"reach %s. Run `commerce dev` as a regular user, from a directory that user can reach, or set DATABASE_URL.", c.cred.Uid, c.dir)
		}
		_ = os.RemoveAll(c.dir)
		return fmt.Errorf("initdb failed: %w\n%s%s", err, out, hint)
	}
	return nil
}

// runningPort reports the port of a server already running on the data
// directory (a previous run that was killed).
func (c *Cluster) runningPort() (int, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.run(ctx, "pg_ctl", "status", "-D", c.dir); err != nil {
		return 0, false
	}
	f, err := os.Open(filepath.Join(c.dir, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if line == 4 { // postmaster.pid: pid, data dir, start time, port, ...
			port, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
			return port, err == nil
		}
	}
	return 0, false
}

// choosePort keeps the port of the last run when it is free, so URLs stay
// the same from run to run, and otherwise takes a free one.
func (c *Cluster) choosePort() (int, error) {
	portFile := filepath.Join(filepath.Dir(c.dir), "postgres.port")
	if b, err := os.ReadFile(portFile); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && free(p) {
			return p, nil
		}
	}
	port := 54329
	if !free(port) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	return port, os.WriteFile(portFile, []byte(strconv.Itoa(port)+"\n"), 0o644)
}

func free(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func (c *Cluster) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.port), time.Second)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("private PostgreSQL did not answer on port %d: %w", c.port, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = os.TempDir()
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
	}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// unprivileged returns the credentials of the "postgres" user (or
// "nobody") for running the cluster when this process is root.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.Atoi(u.Uid)
		gid, err2 := strconv.Atoi(u.Gid)
		if err1 == nil && err2 == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, errors.New("PostgreSQL refuses to run as root and no unprivileged user (postgres, nobody) was found: " +
		"run `commerce dev` as a regular user or set DATABASE_URL")
}
