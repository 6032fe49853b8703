package cli_test

import (
	"errors"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
	"gopkg.in/yaml.v3"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/app/worker"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/devtemporal"
	"github.com/commerce-integration/commerce/workflows"
)

type composeFile struct {
	Services map[string]struct {
		Image           string            `yaml:"image"`
		Build           any               `yaml:"build"`
		Command         []string          `yaml:"command"`
		Environment     map[string]string `yaml:"environment"`
		Ports           []string          `yaml:"ports"`
		Networks        []string          `yaml:"networks"`
		DependsOn       any               `yaml:"depends_on"`
		StopGracePeriod string            `yaml:"stop_grace_period"`
		Healthcheck     struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		Configs []struct {
			Source string `yaml:"source"`
			Target string `yaml:"target"`
		} `yaml:"configs"`
	} `yaml:"services"`
	Configs map[string]struct {
		Content string `yaml:"content"`
	} `yaml:"configs"`
}

// TestComposeFileMatchesTheBinary holds docker-compose.yml (which cannot be
// run on the development machines) to the binary's real configuration.
func TestComposeFileMatchesTheBinary(t *testing.T) {
	raw, err := os.ReadFile("../../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	for _, name := range []string{"postgres", "temporal-schema", "temporal", "temporal-setup", "temporal-ui", "migrate", "api", "worker"} {
		if _, ok := cf.Services[name]; !ok {
			t.Errorf("service %q is missing", name)
		}
	}
	pg := cf.Services["postgres"].Environment
	known := config.Names()
	root := cli.NewRoot()
	required := map[string][]string{
		"migrate": {"DATABASE_URL"},
		"serve":   {"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "COMMERCE_SECRET_KEY", "COMMERCE_LISTEN", "COMMERCE_BASE_URL"},
		"worker":  {"DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "COMMERCE_NIGHTLY_AT"},
	}
	for _, name := range []string{"migrate", "api", "worker"} {
		svc := cf.Services[name]
		if svc.Build == nil || svc.Image != "commerce:local" {
			t.Errorf("%s: does not run the image built from the Dockerfile", name)
		}
		if len(svc.Command) == 0 {
			t.Fatalf("%s: no command", name)
		}
		if c, _, err := root.Find(svc.Command); err != nil || c == root {
			t.Errorf("%s: %v is not a commerce command", name, svc.Command)
		}
		for env := range svc.Environment {
			// OTEL_* are OpenTelemetry's own (package tracing reads them).
			if !slices.Contains(known, env) && !strings.HasPrefix(env, "OTEL_") {
				t.Errorf("%s: sets %s, which the binary does not read", name, env)
			}
		}
		for _, env := range required[svc.Command[0]] {
			if svc.Environment[env] == "" {
				t.Errorf("%s: %s is not set", name, env)
			}
		}
		if dbURL := svc.Environment["DATABASE_URL"]; dbURL != "" {
			u, err := url.Parse(dbURL)
			if err != nil {
				t.Fatalf("%s: DATABASE_URL: %v", name, err)
			}
			pass, _ := u.User.Password()
			if u.Hostname() != "postgres" || u.Port() != "5432" || u.User.Username() != pg["POSTGRES_USER"] ||
				pass != pg["POSTGRES_PASSWORD"] || strings.TrimPrefix(u.Path, "/") != pg["POSTGRES_DB"] {
				t.Errorf("%s: DATABASE_URL %s does not match the postgres service", name, dbURL)
			}
		}
		if addr := svc.Environment["TEMPORAL_ADDRESS"]; addr != "" && addr != "temporal:7233" {
			t.Errorf("%s: TEMPORAL_ADDRESS %s is not the temporal service", name, addr)
		}
		if name != "migrate" && !strings.Contains(toString(svc.DependsOn), "migrate") {
			t.Errorf("%s: does not wait for the migration", name)
		}
	}
	if listen := cf.Services["api"].Environment["COMMERCE_LISTEN"]; !slices.Contains(cf.Services["api"].Ports, "8080"+listen) {
		t.Errorf("api listens on %s but publishes %v", listen, cf.Services["api"].Ports)
	}
	// Only the API is published; Temporal (no authentication) stays inside
	// the compose network and its UI on the host's loopback.
	for name, svc := range cf.Services {
		for _, p := range svc.Ports {
			if name != "api" && !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s: publishes %s beyond the host's loopback", name, p)
			}
		}
	}
	// The API's /metrics is on its own listener, published to no host port
	// and reachable on the monitoring network.
	api := cf.Services["api"]
	metrics := api.Environment["COMMERCE_METRICS_LISTEN"]
	if _, port, ok := strings.Cut(metrics, ":"); !ok || port == "" || strings.HasPrefix(metrics, "127.0.0.1") ||
		!slices.Contains(api.Networks, "monitoring") {
		t.Errorf("api: metrics on %q, networks %v; want a port of its own, on the monitoring network", metrics, api.Networks)
	} else {
		for _, p := range api.Ports {
			if strings.HasSuffix(p, ":"+port) {
				t.Errorf("api publishes its metrics port: %s", p)
			}
		}
	}
	if ports := cf.Services["temporal"].Ports; len(ports) != 0 {
		t.Errorf("temporal publishes %v; its frontend must be reachable inside the compose network only", ports)
	}
	if ui := cf.Services["temporal-ui"].Environment["TEMPORAL_ADDRESS"]; ui != "temporal:7233" {
		t.Errorf("temporal-ui points at %s", ui)
	}
	tmp := cf.Services["temporal"].Environment
	if tmp["POSTGRES_SEEDS"] != "postgres" || tmp["POSTGRES_USER"] != pg["POSTGRES_USER"] || tmp["POSTGRES_PWD"] != pg["POSTGRES_PASSWORD"] {
		t.Errorf("temporal does not persist to the postgres service: %v", tmp)
	}

	checkComposeTemporal(t, cf, raw)
	checkComposeConnections(t, cf)
	if grace, err := time.ParseDuration(cf.Services["worker"].StopGracePeriod); err != nil || grace <= worker.StopTimeout {
		t.Errorf("worker: stop_grace_period %q does not outlast the worker's drain of %s", cf.Services["worker"].StopGracePeriod, worker.StopTimeout)
	}

	dockerfile, err := os.ReadFile("../../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"./cmd/commerce", `ENTRYPOINT ["/commerce"]`, "CGO_ENABLED=0"} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("Dockerfile does not contain %s", want)
		}
	}
}

// checkComposeTemporal holds the compose file's Temporal to what the service
// needs: the server go.mod pins, its namespace and search attributes made by
// a job the service waits for, health checks, and no development switches.
func checkComposeTemporal(t *testing.T, cf composeFile, raw []byte) {
	t.Helper()
	version := goModVersion(t, "go.temporal.io/server")
	for name, image := range map[string]string{"temporal": "temporalio/server", "temporal-schema": "temporalio/admin-tools", "temporal-setup": "temporalio/admin-tools"} {
		if want := image + ":" + version; cf.Services[name].Image != want {
			t.Errorf("%s runs %s; go.mod pins go.temporal.io/server v%s, so want %s", name, cf.Services[name].Image, version, want)
		}
	}
	waits := func(name, on, condition string) {
		deps, _ := cf.Services[name].DependsOn.(map[string]any)
		dep, _ := deps[on].(map[string]any)
		if dep["condition"] != condition {
			t.Errorf("%s does not wait for %s to be %s (depends_on %v)", name, on, condition, deps)
		}
	}
	waits("temporal", "temporal-schema", "service_completed_successfully")
	waits("temporal-setup", "temporal", "service_healthy")
	for _, name := range []string{"api", "worker", "temporal-ui"} {
		waits(name, "temporal-setup", "service_completed_successfully")
	}
	for _, name := range []string{"postgres", "temporal"} {
		if len(cf.Services[name].Healthcheck.Test) == 0 {
			t.Errorf("%s has no health check", name)
		}
	}
	// The setup job creates, with the namespace, every search attribute the
	// workflows carry, with its type.
	setup := strings.Join(cf.Services["temporal-setup"].Command, "\n")
	for _, want := range []string{"temporal operator namespace create", "temporal operator search-attribute create"} {
		if !strings.Contains(setup, want) {
			t.Errorf("temporal-setup does not run %s", want)
		}
	}
	for name, typ := range workflows.SearchAttributes() {
		kind := strings.TrimPrefix(typ.String(), "INDEXED_VALUE_TYPE_")
		kind = kind[:1] + strings.ToLower(kind[1:])
		if want := "create_attribute " + name + " " + kind + "\n"; !strings.Contains(setup, want) {
			t.Errorf("temporal-setup does not create the search attribute %s (%s)", name, kind)
		}
	}
	// Done only once the server takes the attributes: until then it
	// refuses starts that set them.
	if want := `temporal workflow count --namespace "$$NAMESPACE" --query "` + workflows.UsableQuery() + `"`; !strings.Contains(setup, want) {
		t.Errorf("temporal-setup does not wait until the server takes the attributes (%s)", want)
	}
	// The server talks to Postgres through the plugin the embedded
	// Postgres store (and so the end-to-end tests on it) runs.
	if db := cf.Services["temporal"].Environment["DB"]; db != devtemporal.PostgresPlugin {
		t.Errorf("temporal: DB is %q; the embedded Postgres store runs %q", db, devtemporal.PostgresPlugin)
	}
	// Said explicitly: the server will require it to start without an
	// authorizer.
	if cf.Services["temporal"].Environment["TEMPORAL_ALLOW_NO_AUTH"] != "true" {
		t.Error("temporal: TEMPORAL_ALLOW_NO_AUTH is not \"true\"")
	}
	// The server reads a production dynamic config: none of the switches of
	// the development and test servers.
	dc := cf.Services["temporal"].Environment["DYNAMIC_CONFIG_FILE_PATH"]
	mounted := false
	for _, c := range cf.Services["temporal"].Configs {
		if c.Target == dc {
			mounted = true
			var values map[string]any
			if err := yaml.Unmarshal([]byte(cf.Configs[c.Source].Content), &values); err != nil {
				t.Errorf("dynamic config %s: %v", c.Source, err)
			}
			// The server's own loader takes every key and value: a key it
			// does not know (a typo) it would only log, and ignore.
			loaded := dynamicconfig.LoadYamlFile([]byte(cf.Configs[c.Source].Content))
			if err := errors.Join(append(loaded.Errors, loaded.Warnings...)...); err != nil {
				t.Errorf("dynamic config %s, as the server loads it: %v", c.Source, err)
			}
			for key := range values {
				if slices.Contains(devOnlyDynamicConfig, key) {
					t.Errorf("the dynamic config sets %s, a development switch", key)
				}
			}
			// The history caches are bounded as devtemporal.ServerCacheLimits
			// says (docs/operations.md, Memory). The server reads keys
			// whatever their case.
			lower := map[string]any{}
			for key, v := range values {
				lower[strings.ToLower(key)] = v
			}
			for key, want := range devtemporal.ServerCacheLimits.Settings() {
				list, _ := lower[strings.ToLower(key)].([]any)
				var got any
				if len(list) == 1 {
					if m, ok := list[0].(map[string]any); ok {
						got = m["value"]
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("the dynamic config sets %s to %#v, want [{value: %#v}]", key, lower[strings.ToLower(key)], want)
				}
			}
		}
	}
	if !mounted {
		t.Errorf("temporal reads its dynamic config from %q, which no config is mounted at", dc)
	}
	for _, bad := range append(devOnlyDynamicConfig, "development-sql.yaml", "development-cass.yaml", "auto-setup") {
		if strings.Contains(strings.ToLower(string(raw)), strings.ToLower(bad)) {
			t.Errorf("docker-compose.yml mentions %s", bad)
		}
	}
}

// devOnlyDynamicConfig are the dynamic config keys the embedded servers of
// `commerce dev` and the tests set, and a real cluster must not.
var devOnlyDynamicConfig = []string{
	"system.forceSearchAttributesCacheRefreshOnRead",
	"matching.numTaskqueueReadPartitions",
	"matching.numTaskqueueWritePartitions",
	"history.transferProcessorMaxPollRPS",
}

// goModVersion is the version go.mod requires of module, without its "v".
func goModVersion(t *testing.T, module string) string {
	t.Helper()
	gomod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require ")); len(f) >= 2 && f[0] == module {
			return strings.TrimPrefix(f[1], "v")
		}
	}
	t.Fatalf("go.mod does not require %s", module)
	return ""
}

func toString(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

// checkComposeConnections holds the compose file's pools to Postgres's
// max_connections: with two api and two worker replicas, and the Temporal
// server's two persistence and two visibility clients (measured by
// bench/prodshape), the most connections stay under 80% of it.
func checkComposeConnections(t *testing.T, cf composeFile) {
	t.Helper()
	num := func(service, key string) int {
		v, err := strconv.Atoi(cf.Services[service].Environment[key])
		if err != nil {
			t.Errorf("%s: %s is %q, not a number", service, key, cf.Services[service].Environment[key])
		}
		return v
	}
	pg := cf.Services["postgres"].Command
	i := slices.Index(pg, "-c")
	if i < 0 || i+1 >= len(pg) || !strings.HasPrefix(pg[i+1], "max_connections=") {
		t.Fatalf("postgres: command %v does not set max_connections", pg)
	}
	maxConns, err := strconv.Atoi(strings.TrimPrefix(pg[i+1], "max_connections="))
	if err != nil {
		t.Fatal(err)
	}
	apiConns := num("api", "COMMERCE_DB_MAX_CONNS")
	apiConns += int(db.RateMaxConns(int32(apiConns)))
	workerConns := num("worker", "COMMERCE_DB_MAX_CONNS")
	temporal := 2 * (num("temporal", "SQL_MAX_CONNS") + num("temporal", "SQL_VIS_MAX_CONNS"))
	if idle := num("temporal", "SQL_MAX_IDLE_CONNS"); idle > num("temporal", "SQL_MAX_CONNS") {
		t.Errorf("temporal: SQL_MAX_IDLE_CONNS %d over SQL_MAX_CONNS", idle)
	}
	if total := temporal + 2*apiConns + 2*workerConns; total*100 >= 80*maxConns {
		t.Errorf("with two api and two worker replicas the pools open up to %d connections (Temporal %d, api %d each, worker %d each): not under 80%% of max_connections %d",
			total, temporal, apiConns, workerConns, maxConns)
	}
	if wait := cf.Services["api"].Environment["COMMERCE_DB_ACQUIRE_WAIT"]; wait == "" {
		t.Error("api: COMMERCE_DB_ACQUIRE_WAIT is not set")
	}
}
