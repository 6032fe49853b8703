package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deps lists the packages the command links with the given build tags.
func deps(t *testing.T, tags string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-tags", tags, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %q: %v", tags, err)
	}
	return strings.Fields(string(out))
}

func linksPrefix(pkgs []string, prefix string) bool {
	for _, p := range pkgs {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

func TestTheNodevBuildLeavesOutCommerceDevAndTheEmbeddedServer(t *testing.T) {
	const server, dev = "go.temporal.io/server", "github.com/commerce-integration/commerce/internal/app/dev"
	if all := deps(t, ""); !linksPrefix(all, server) || !linksPrefix(all, dev) {
		t.Fatal("the default build does not link commerce dev and the embedded Temporal server")
	}
	nodev := deps(t, "nodev")
	if linksPrefix(nodev, server) || linksPrefix(nodev, dev) {
		t.Fatal("the nodev build links commerce dev or the embedded Temporal server")
	}
	if !linksPrefix(nodev, "go.temporal.io/sdk") || !linksPrefix(nodev, "github.com/commerce-integration/commerce/api") {
		t.Fatal("the nodev build lost the API or the Temporal SDK")
	}

	// Its dev command says what the build is and what to do.
	bin := filepath.Join(t.TempDir(), "commerce")
	if out, err := exec.Command("go", "build", "-tags", "nodev", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nodev: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "dev", "--dir", t.TempDir()).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("commerce dev in a nodev build: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "built without `commerce dev` (build tag nodev)") {
		t.Fatalf("commerce dev in a nodev build said: %s", out)
	}
	if out, err := exec.Command(bin, "serve", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "serve") {
		t.Fatalf("commerce serve --help in a nodev build: %v\n%s", err, out)
	}
}
