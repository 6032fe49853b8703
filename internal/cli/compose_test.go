package cli_test

import (
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/commerce-integration/commerce/internal/cli"
	"github.com/commerce-integration/commerce/internal/config"
)

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Ports       []string          `yaml:"ports"`
		DependsOn   any               `yaml:"depends_on"`
	} `yaml:"services"`
}

// TestComposeFileMatchesTheBinary holds docker-compose.yml (which cannot be
// run on the development machines) to the binary's real configuration.
func TestComposeFileMatchesTheBinary(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(raw, &cf); err != nil {
		t.Fatalf("docker-compose.yml does not parse: %v", err)
	}
	for _, name := range []string{"postgres", "temporal", "temporal-ui", "migrate", "api", "worker"} {
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
			if !slices.Contains(known, env) {
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

	dockerfile, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"./cmd/commerce", `ENTRYPOINT ["/commerce"]`, "CGO_ENABLED=0"} {
		if !strings.Contains(string(dockerfile), want) {
			t.Errorf("Dockerfile does not contain %s", want)
		}
	}
}

func toString(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
