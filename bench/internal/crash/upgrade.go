package crash

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/commerce-integration/commerce/bench/internal/procs"
)

// errUpgradeLost is returned by RunUpgrade when the upgrade lost, doubled
// or broke anything (exit status 1); any other error means the rehearsal
// could not be made (2).
var errUpgradeLost = errors.New("the rolling upgrade lost, doubled or broke something")

func upgradeExit(err error) int {
	if errors.Is(err, errUpgradeLost) {
		return 1
	}
	return 2
}

// MainUpgrade runs RunUpgrade and prints its figures.
func MainUpgrade(ctx context.Context, o Options) error {
	r, err := RunUpgrade(ctx, o)
	if err != nil {
		return err
	}
	if r.Failed() {
		return errUpgradeLost
	}
	return nil
}

// changelogCommit finds "commit <hash>" on the heading of ref's section of
// CHANGELOG.md ("## v0.1.0 (2026-11-28, commit 6cbbf08)").
var changelogCommit = regexp.MustCompile(`commit ([0-9a-f]{7,40})`)

// resolveRef is the commit ref names in the repository at root: the ref
// itself, or else the commit CHANGELOG.md records on the ref's heading.
func resolveRef(ctx context.Context, root, ref string) (string, error) {
	revParse := func(r string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", "rev-parse", "--verify", "--quiet", r+"^{commit}")
		cmd.Dir = root
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	if c, err := revParse(ref); err == nil && c != "" {
		return c, nil
	}
	if f, err := os.Open(filepath.Join(root, "CHANGELOG.md")); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "## "+ref+" ") {
				continue
			}
			if m := changelogCommit.FindStringSubmatch(line); m != nil {
				if c, err := revParse(m[1]); err == nil && c != "" {
					return c, nil
				}
				return "", fmt.Errorf("git ref %q does not resolve, and CHANGELOG.md's commit %s for it is not in this clone: run `git fetch --tags` (a shallow clone: `git fetch --unshallow --tags`)", ref, m[1])
			}
		}
	}
	return "", fmt.Errorf("git ref %q does not resolve in %s: run `git fetch --tags` (or name a commit)", ref, root)
}

// buildOld builds the commerce of commit as the image does (-tags nodev),
// from its tree exported by git archive into dir.
func buildOld(ctx context.Context, root, commit, dir string, out func(string, ...any)) (string, error) {
	started := time.Now()
	src := filepath.Join(dir, "old-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.CommandContext(ctx, "git", "archive", "--format=tar", commit)
	archive.Dir = root
	tar := exec.CommandContext(ctx, "tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	tar.Stdin = pipe
	if err := archive.Start(); err != nil {
		return "", err
	}
	if o, err := tar.CombinedOutput(); err != nil {
		_ = archive.Wait()
		return "", fmt.Errorf("tar -x of git archive %s: %w\n%s", commit, err, o)
	}
	if err := archive.Wait(); err != nil {
		return "", fmt.Errorf("git archive %s: %w", commit, err)
	}
	bin := filepath.Join(dir, "commerce-old")
	// -trimpath: the export's directory differs each time; without it
	// no package of the old tree would be taken from the build cache.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "nodev", "-ldflags=-s -w", "-o", bin, "./cmd/commerce")
	cmd.Dir = src
	if o, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build the commerce of %s: %w\n%s", commit, err, o)
	}
	_ = os.RemoveAll(src)
	out("built commerce of %s in %.1fs\n", commit[:12], time.Since(started).Seconds())
	return bin, nil
}

// migrateWith runs `bin migrate` on dbURL.
//
// The database server is shared with whatever else runs on the machine: a
// migration refused a connection because the server has none left
// (SQLSTATE 53300, "too many clients") is tried again, for up to a minute.
func migrateWith(ctx context.Context, bin, dbURL string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.CommandContext(ctx, bin, "migrate")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "COMMERCE_LOG_FORMAT=json")
		o, err := cmd.CombinedOutput()
		if err == nil {
			return nil
		}
		full := bytes.Contains(o, []byte("53300")) || bytes.Contains(o, []byte("too many clients"))
		if !full || time.Now().After(deadline) {
			return fmt.Errorf("%s migrate: %w\n%s", filepath.Base(bin), err, o)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// RunUpgrade rehearses a rolling upgrade from o.Upgrade to this checkout
// on the production shape: the old release's replicas on its own schema
// with work in flight, the schema migrated by the new release under them,
// the replicas replaced one at a time while posts keep coming, then the
// work left finished on the new ones and everything checked
// (docs/versioning.md#rolling-upgrades).
func RunUpgrade(ctx context.Context, o Options) (UpgradeResult, error) {
	o.Shape, o.Runs, o.Faults = ShapeProd, 1, []Fault{}
	if o.Deliveries < o.Posts {
		o.Deliveries = o.Posts
	}
	if err := o.validate(); err != nil {
		return UpgradeResult{}, err
	}
	out := func(format string, args ...any) { fmt.Fprintf(o.Out, format, args...) }
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return UpgradeResult{}, err
	}
	commit, err := resolveRef(ctx, root, o.Upgrade)
	if err != nil {
		return UpgradeResult{}, err
	}
	dir, err := os.MkdirTemp("", "upgrade-")
	if err != nil {
		return UpgradeResult{}, err
	}
	defer os.RemoveAll(dir)
	oldBin, err := buildOld(ctx, root, commit, dir, out)
	if err != nil {
		return UpgradeResult{}, err
	}
	cf, err := readCompose(ctx)
	if err != nil {
		return UpgradeResult{}, err
	}
	bins, err := buildProd(ctx, dir, out)
	if err != nil {
		return UpgradeResult{}, err
	}
	newBin := bins.commerce
	bins.commerce = oldBin
	u := &upgrade{setup: &setup{opts: o, bins: bins, compose: cf}, newBin: newBin, oldBin: oldBin}
	u.migrate = func(ctx context.Context, dbURL string) error { return migrateWith(ctx, oldBin, dbURL) }
	u.prepare = u.data
	defer u.close()
	out("\nrolling upgrade from %s (%s) to this checkout: %d posts while it rolls, %d parked, %d failed for a bulk replay, %d API replicas and %d workers\n",
		o.Upgrade, commit[:12], o.Posts, upgradeParked, upgradeFailed, o.APIs, o.Workers)
	if err := u.start(ctx); err != nil {
		return UpgradeResult{}, err
	}
	res, err := u.run(ctx)
	if err != nil {
		return res, err
	}
	res.print(o.Out)
	u.keepLogs = res.Failed()
	return res, nil
}

// replace stops process i of kind (api or worker) with SIGTERM and starts
// the new release's in its place (an API replica on the same port).
func (u *upgrade) replace(ctx context.Context, kind string, i int) error {
	u.mu.Lock()
	var old *proc
	if kind == "api" {
		old = u.apis[i]
	} else {
		old = u.workers[i]
	}
	u.mu.Unlock()
	started := time.Now()
	if kind == "api" {
		// Out of the clients' rotation while it drains, as a load balancer
		// takes a replica out before it is stopped.
		u.mu.Lock()
		u.apiURLs = slices.DeleteFunc(slices.Clone(u.apiURLs), func(s string) bool { return s == u.urlOf(i) })
		u.mu.Unlock()
	}
	old.stop()
	if kind == "api" {
		if _, err := u.startAPI(ctx, i); err != nil {
			return err
		}
		u.mu.Lock()
		u.apiURLs = append(u.apiURLs, u.urlOf(i))
		u.mu.Unlock()
	} else if _, err := u.startWorker(ctx, i); err != nil {
		return err
	}
	u.printf("%s %d: the old release's replaced by the new one in %.1fs (SIGTERM, then started)\n", kind, i+1, time.Since(started).Seconds())
	// Posts go on between one replacement and the next.
	at := u.answered.get()
	return u.waitFor(ctx, "posts answered after the replacement", 30*time.Second, func() (bool, error) {
		return u.answered.get() >= min(at+2, u.opts.Posts), nil
	})
}

func (u *upgrade) urlOf(i int) string { return "http://127.0.0.1:" + strconv.Itoa(u.apiPorts[i]) }

// oldReplicaServes checks, after the migration, that an old API replica
// still takes a post and answers a REST read, and what its /readyz says.
func (u *upgrade) oldReplicaServes(ctx context.Context, hc *http.Client) error {
	base := u.urlOf(0)
	code, body, err := u.call(ctx, hc, base, http.MethodGet, "/api/v1/inbound/receipts?limit=5", nil)
	if err != nil || code != http.StatusOK {
		return fmt.Errorf("an old API replica's GET /api/v1/inbound/receipts after the migration: %d %v %s", code, err, body)
	}
	u.res.OldReadOK = true
	resp, err := hc.Get(base + "/readyz")
	if err == nil {
		resp.Body.Close()
		u.res.OldReadyz = resp.StatusCode
	}
	return nil
}
