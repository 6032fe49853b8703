package main

import (
	"os/exec"
	"strings"
	"testing"
)

// module is the service's module path.
const module = "github.com/commerce-integration/commerce"

// layerRule is one rule of the layering README.md draws (Architecture):
// the packages listed reach none of the forbidden ones. With direct, only
// their own imports count (go list -f {{.Imports}}); otherwise everything
// they reach through others too (go list -deps).
type layerRule struct {
	why    string
	pkgs   []string
	forbid []string
	direct bool
}

// layers are the rules, from the bottom of the stack up.
var layers = []layerRule{
	{why: "the rules and vocabulary: nothing of the service, no storage, transport or Temporal",
		pkgs: []string{"./domain"}, forbid: []string{module + "/", "github.com/jackc/", "github.com/danielgtaylor/", "go.temporal.io/"}},
	{why: "storage only stores: no service above it, no HTTP, no Temporal",
		pkgs: []string{"./db"}, forbid: []string{module + "/api", module + "/integrations", module + "/workflows", module + "/activities",
			module + "/internal/relay", module + "/internal/app/", "github.com/danielgtaylor/", "github.com/go-chi/", "go.temporal.io/"}},
	{why: "workflows know the activities only by their signatures and exchange domain values: no storage, no service",
		pkgs: []string{"./workflows"}, forbid: []string{module + "/db", module + "/activities", module + "/integrations", module + "/api",
			module + "/internal/relay", module + "/internal/app/", "github.com/jackc/"}},
	{why: "the application services: no transport, no activities, no assembly",
		pkgs: []string{"./integrations"}, forbid: []string{module + "/api", module + "/activities", module + "/internal/relay",
			module + "/internal/app/", "github.com/danielgtaylor/", "github.com/go-chi/"}},
	{why: "the worker's side (activities may call the application services, for bulk replays): never the HTTP layer or an assembly",
		pkgs: []string{"./activities", "./internal/relay"}, forbid: []string{module + "/api", module + "/internal/app/", "github.com/danielgtaylor/"}},
	{why: "the HTTP layer: no activities, relays or assembly (the console is mounted by the CLI's)",
		pkgs: []string{"./api"}, forbid: []string{module + "/activities", module + "/internal/relay", module + "/internal/app/"}},
	{why: "the console: a face beside the HTTP layer, never the worker's side or another assembly",
		pkgs: []string{"./internal/app/console"}, forbid: []string{module + "/activities", module + "/internal/relay", module + "/api",
			module + "/internal/app/cli", module + "/internal/app/worker", module + "/internal/app/dev"}},
	{why: "the worker's assembly: no HTTP layer or console",
		pkgs: []string{"./internal/app/worker"}, forbid: []string{module + "/api", module + "/internal/app/console", module + "/internal/app/cli"}},
	{why: "the faces reach Temporal's workflows only through the application services, built by their process's assembly",
		pkgs: []string{"./api", "./internal/app/console"}, forbid: []string{module + "/workflows", "go.temporal.io/sdk/workflow"}, direct: true},
}

// TestLayersImportOnlyDownward holds the layout README.md draws: each
// layer imports nothing of the layers above it, and each rule there is a
// rule here.
func TestLayersImportOnlyDownward(t *testing.T) {
	for _, c := range layers {
		args := []string{"list", "-deps"}
		if c.direct {
			args = []string{"list", "-f", "{{join .Imports \"\\n\"}}"}
		}
		out, err := exec.Command("go", append(args, prefixed("../../", c.pkgs)...)...).Output()
		if err != nil {
			t.Fatalf("go %v: %v", args, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range c.forbid {
				// A package is among its own deps: a listed package is
				// not held against itself.
				if strings.HasPrefix(dep, f) && !isOneOf(dep, c.pkgs) {
					t.Errorf("%v reaches %s (%s)", c.pkgs, dep, c.why)
				}
			}
		}
	}
}

// A rule that could not fail would hold nothing: each forbids what some
// package of the module does import, so a broken rule would be seen.
func TestLayerRulesForbidSomethingReal(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../cmd/commerce").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	for _, c := range layers {
		for _, f := range c.forbid {
			found := false
			for _, d := range deps {
				if strings.HasPrefix(d, f) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("rule %q forbids %s, which the binary does not reach: the rule names nothing", c.why, f)
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
