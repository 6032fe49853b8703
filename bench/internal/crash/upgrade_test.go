package crash

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnUpgradeRefResolvesFromCHANGELOGWhenTheTagIsMissing: a tag that the
// clone lacks resolves to the commit its CHANGELOG.md heading records; a ref
// known nowhere is refused with what to do.
func TestAnUpgradeRefResolvesFromCHANGELOGWhenTheTagIsMissing(t *testing.T) {
	root := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	git("add", "a.txt")
	git("commit", "-q", "-m", "first")
	commit := git("rev-parse", "HEAD")
	changelog := "# Changelog\n\n## v9.9.9 (2026-01-01, commit " + commit[:7] + ")\n\n- first\n"
	if err := os.WriteFile(filepath.Join(root, "CHANGELOG.md"), []byte(changelog), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := resolveRef(t.Context(), root, "v9.9.9")
	if err != nil || got != commit {
		t.Errorf("resolveRef(v9.9.9) = %q, %v; want %s from CHANGELOG.md", got, err, commit)
	}
	if got, err := resolveRef(t.Context(), root, "HEAD"); err != nil || got != commit {
		t.Errorf("resolveRef(HEAD) = %q, %v; want %s", got, err, commit)
	}
	if _, err := resolveRef(t.Context(), root, "v8.0.0"); err == nil || !strings.Contains(err.Error(), "git fetch --tags") {
		t.Errorf("resolveRef(v8.0.0) = %v; want an error saying to run git fetch --tags", err)
	}
}
