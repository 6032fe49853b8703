package main

import (
	"os/exec"
	"strings"
	"testing"
)

// module is the service's module path.
const module = "github.com/commerce-integration/commerce"

// TestLayersImportOnlyDownward holds the layout README.md draws: each
// layer imports nothing of the layers above it. A package listed here
// reaches none of the packages named after it, directly or through others
// (go list -deps).
func TestLayersImportOnlyDownward(t *testing.T) {
	for _, c := range []struct {
		pkgs   []string
		forbid []string
	}{
		// The rules and vocabulary: no storage, transport or Temporal.
		{[]string{"./domain"}, []string{module + "/", "github.com/jackc/", "github.com/danielgtaylor/", "go.temporal.io/"}},
		// Storage: no service above it, no HTTP, no Temporal.
		{[]string{"./db"}, []string{module + "/api", module + "/integrations", module + "/workflows", module + "/activities",
			module + "/internal/app/", "github.com/danielgtaylor/", "go.temporal.io/"}},
		// The worker's side: never the HTTP layer or an assembly.
		{[]string{"./activities", "./internal/relay", "./workflows", "./domain"}, []string{module + "/api", module + "/internal/app/"}},
		// The application services: no transport, no assembly.
		{[]string{"./integrations"}, []string{module + "/api", module + "/internal/app/", "github.com/danielgtaylor/"}},
		// The HTTP layer: no assembly (the console is mounted by the CLI).
		{[]string{"./api"}, []string{module + "/internal/app/"}},
	} {
		out, err := exec.Command("go", append([]string{"list", "-deps"}, prefixed("../../", c.pkgs)...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", c.pkgs, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range c.forbid {
				// A package is among its own deps: a listed package is
				// not held against itself.
				if strings.HasPrefix(dep, f) && !isOneOf(dep, c.pkgs) {
					t.Errorf("%v reaches %s", c.pkgs, dep)
				}
			}
		}
	}
}

func prefixed(prefix string, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = prefix + strings.TrimPrefix(p, "./")
	}
	return out
}

// isOneOf reports whether dep is one of the packages pkgs names.
func isOneOf(dep string, pkgs []string) bool {
	for _, p := range pkgs {
		if dep == module+"/"+strings.TrimPrefix(p, "./") {
			return true
		}
	}
	return false
}
