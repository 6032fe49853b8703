package crash

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"
	"gopkg.in/yaml.v3"

	"github.com/commerce-integration/commerce/bench/internal/procs"
	"github.com/commerce-integration/commerce/internal/devtemporal"
	"github.com/commerce-integration/commerce/workflows"
)

// The shapes a run takes.
const (
	// ShapeEmbedded: the embedded Temporal server of `commerce dev` and the
	// API in the harness's process, the worker a `commerce worker` process.
	ShapeEmbedded = "embedded"
	// ShapeProd: docker-compose.yml's shape as processes. The Temporal
	// server built from the pinned module, on two Postgres databases its
	// own SQL tool sets up; `commerce serve` and `commerce worker`
	// processes (two of each by default); every pool sized as the compose
	// file sizes it.
	ShapeProd = "prod"
)

// prodBins are the binaries of the production shape, built once.
type prodBins struct {
	commerce, server, sqlTool string
	// schemaDir is the Temporal module's schema directory, which the
	// admin-tools image ships as /etc/temporal/schema.
	schemaDir string
}

// buildProd builds `commerce` as the image does (-tags nodev), and the
// Temporal server and its SQL tool from the module go.mod pins.
func buildProd(ctx context.Context, dir string, out func(string, ...any)) (prodBins, error) {
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return prodBins{}, err
	}
	var b prodBins
	for _, t := range []struct {
		bin  *string
		name string
		args []string
	}{
		{&b.commerce, "commerce", []string{"-tags", "nodev", "./cmd/commerce"}},
		{&b.server, "temporal-server", []string{"go.temporal.io/server/cmd/server"}},
		{&b.sqlTool, "temporal-sql-tool", []string{"go.temporal.io/server/cmd/tools/sql"}},
	} {
		started := time.Now()
		*t.bin = filepath.Join(dir, t.name)
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-ldflags=-s -w", "-o", *t.bin}, t.args...)...)
		cmd.Dir = root
		if o, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("go build %s: %w\n%s", t.name, err, o)
		}
		out("built %s in %.1fs\n", t.name, time.Since(started).Seconds())
	}
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "go.temporal.io/server")
	cmd.Dir = root
	mod, err := cmd.Output()
	if err != nil {
		return b, fmt.Errorf("go list -m go.temporal.io/server: %w", err)
	}
	b.schemaDir = filepath.Join(strings.TrimSpace(string(mod)), "schema")
	return b, nil
}

// compose is what the harness reads of docker-compose.yml: each service's
// environment (the pool sizes above all) and the Temporal server's dynamic
// config.
type compose struct {
	Services map[string]struct {
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
	Configs map[string]struct {
		Content string `yaml:"content"`
	} `yaml:"configs"`
}

func readCompose(ctx context.Context) (compose, error) {
	var c compose
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return c, err
	}
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		return c, err
	}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("docker-compose.yml: %w", err)
	}
	for _, name := range []string{"temporal", "api", "worker"} {
		if _, ok := c.Services[name]; !ok {
			return c, fmt.Errorf("docker-compose.yml has no service %q", name)
		}
	}
	return c, nil
}

// ComposePools are the pool settings a run takes from docker-compose.yml:
// the Temporal server's (SQL_*), the API's and the worker's
// (COMMERCE_DB_*).
var composePools = map[string][]string{
	"temporal": {"SQL_MAX_CONNS", "SQL_MAX_IDLE_CONNS", "SQL_VIS_MAX_CONNS", "SQL_VIS_MAX_IDLE_CONNS", "TEMPORAL_ALLOW_NO_AUTH", "DB", "NUM_HISTORY_SHARDS"},
	"api":      {"COMMERCE_DB_MAX_CONNS", "COMMERCE_DB_ACQUIRE_WAIT"},
	"worker":   {"COMMERCE_DB_MAX_CONNS"},
}

// envOf is service's settings among composePools, as KEY=value.
func (c compose) envOf(service string) []string {
	var env []string
	for _, k := range composePools[service] {
		if v, ok := c.Services[service].Environment[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// temporalServer is the production shape's Temporal server: its two
// databases, the environment of its process, and the process, which a
// fault kills and restarts.
type temporalServer struct {
	bin     string
	env     []string
	dir     string
	address string
	starts  int
	proc    *proc
}

// setupTemporal creates the server's two databases beside the run's and
// sets up their schemas with the server's SQL tool, with the steps of
// docker-compose.yml's temporal-schema job; then writes the server's
// environment (compose's, on free loopback ports).
func setupTemporal(ctx context.Context, b prodBins, c compose, dbURL, dir string) (*temporalServer, func(), error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, nil, err
	}
	base := strings.TrimPrefix(u.Path, "/")
	names := map[string]string{"temporal": base + "_temporal", "visibility": base + "_temporal_visibility"}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "5432"
	}
	user := u.User.Username()
	password, _ := u.User.Password()
	toolEnv := append(os.Environ(), "SQL_PLUGIN=postgres12", "SQL_HOST="+host, "SQL_PORT="+port, "SQL_USER="+user, "SQL_PASSWORD="+password)
	drop := func() {
		for _, name := range names {
			cmd := exec.Command(b.sqlTool, "--db", name, "drop-database", "--force")
			cmd.Env = toolEnv
			_ = cmd.Run()
		}
	}
	for _, store := range []string{"temporal", "visibility"} {
		name := names[store]
		for _, args := range [][]string{
			{"--db", name, "create-database"},
			{"--db", name, "setup-schema", "-v", "0.0"},
			{"--db", name, "update-schema", "-d", filepath.Join(b.schemaDir, "postgresql", "v12", store, "versioned")},
		} {
			cmd := exec.CommandContext(ctx, b.sqlTool, args...)
			cmd.Env = toolEnv
			if out, err := cmd.CombinedOutput(); err != nil {
				drop()
				return nil, nil, fmt.Errorf("temporal-sql-tool %s: %w\n%s", strings.Join(args, " "), err, out)
			}
		}
	}
	dc := filepath.Join(dir, "temporal-dynamicconfig.yaml")
	if err := os.WriteFile(dc, []byte(c.Configs["temporal-dynamicconfig"].Content), 0o600); err != nil {
		drop()
		return nil, nil, err
	}
	ports, err := devtemporal.FreePorts("127.0.0.1", 10)
	if err != nil {
		drop()
		return nil, nil, err
	}
	env := append(c.envOf("temporal"),
		"POSTGRES_SEEDS="+host, "DB_PORT="+port, "POSTGRES_USER="+user, "POSTGRES_PWD="+password,
		"DBNAME="+names["temporal"], "VISIBILITY_DBNAME="+names["visibility"],
		"BIND_ON_IP=127.0.0.1", "DYNAMIC_CONFIG_FILE_PATH="+dc, "LOG_LEVEL=warn")
	for i, k := range []string{"FRONTEND_GRPC_PORT", "FRONTEND_HTTP_PORT", "INTERNAL_FRONTEND_HTTP_PORT", "FRONTEND_MEMBERSHIP_PORT",
		"MATCHING_GRPC_PORT", "MATCHING_MEMBERSHIP_PORT", "HISTORY_GRPC_PORT", "HISTORY_MEMBERSHIP_PORT",
		"WORKER_GRPC_PORT", "WORKER_MEMBERSHIP_PORT"} {
		env = append(env, k+"="+strconv.Itoa(ports[i]))
	}
	return &temporalServer{bin: b.server, env: env, dir: dir, address: "127.0.0.1:" + strconv.Itoa(ports[0])}, drop, nil
}

// start starts the server and waits until its frontend answers.
func (t *temporalServer) start(ctx context.Context) error {
	t.starts++
	p, err := startProc(ctx, "temporal server", t.bin, []string{"start"}, t.env,
		filepath.Join(t.dir, "temporal-"+strconv.Itoa(t.starts)+".log"), 3*time.Minute,
		func(*proc) bool { return frontendAnswers(ctx, t.address) })
	t.proc = p
	return err
}

// frontendAnswers reports whether the frontend at address answers a health
// check.
func frontendAnswers(ctx context.Context, address string) bool {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := client.DialContext(cctx, client.Options{HostPort: address, Logger: quiet{}})
	if err != nil {
		return false
	}
	defer c.Close()
	_, err = c.CheckHealth(cctx, &client.CheckHealthRequest{})
	return err == nil
}

// setupNamespace creates the namespace and the service's search attributes,
// as the compose file's temporal-setup job does with the temporal CLI.
func setupNamespace(ctx context.Context, address, namespace string) error {
	c, err := client.DialContext(ctx, client.Options{HostPort: address, Logger: quiet{}})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(168 * time.Hour)})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("register namespace: %w", err)
	}
	// A new namespace reaches every service of the server within a few
	// seconds; until then adding attributes says it is not found. Then,
	// like the job, wait until a query by the attributes is taken: until
	// then the server would refuse starts that set them.
	deadline := time.Now().Add(time.Minute)
	added := false
	for {
		if !added {
			_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
				Namespace: namespace, SearchAttributes: workflows.SearchAttributes()})
			added = err == nil
		}
		if added {
			_, err = c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
				Namespace: namespace, Query: workflows.UsableQuery()})
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s and its search attributes: %w", namespace, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// apiReady reports whether the API at base answers /readyz with 200.
func apiReady(base string) bool {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startAPI runs `commerce serve` on the given loopback port and waits until
// it is ready.
func startAPI(ctx context.Context, bin string, env []string, port int, logPath string) (*proc, error) {
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	return startProc(ctx, "commerce serve", bin, []string{"serve"},
		append(env, "COMMERCE_LISTEN=127.0.0.1:"+strconv.Itoa(port)), logPath, 2*time.Minute,
		func(*proc) bool { return apiReady(base) })
}
