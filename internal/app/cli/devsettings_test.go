package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// writeDevSettings writes dir/dev.json as `commerce dev` does.
func writeDevSettings(t *testing.T, dir string, s config.DevSettings) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dev.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// runHere runs the command tree with args alone (no --database-url), in the
// current directory and environment.
func runHere(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cli.Execute(cli.NewRoot(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCommandsBesideCommerceDevTakeItsSettings(t *testing.T) {
	for _, name := range config.Names() {
		t.Setenv(name, "")
	}
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(context.Background(), db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	orgID := org.ID.String()
	work := t.TempDir()
	devDir := filepath.Join(work, ".commerce")
	settings := config.DevSettings{DatabaseURL: d.URL, TemporalAddress: "127.0.0.1:1", TemporalNamespace: "dev",
		SecretKey: strings.Repeat("5e", 32), AllowPrivateTargets: true}
	writeDevSettings(t, devDir, settings)
	t.Chdir(work)
	const said = "using commerce dev settings from .commerce/dev.json\n"

	// The database, the key and the loopback allowance all come from
	// dev.json: without it each would fail.
	code, out, errOut := runHere("webhook", "add", "--org", orgID, "--url", "http://127.0.0.1:9000/hook", "--json")
	if code != 0 || errOut != said {
		t.Fatalf("webhook add beside dev: exit %d, stderr %q; want 0 and once %q", code, errOut, said)
	}
	var sub struct{ ID, Secret string }
	mustJSON(t, out, &sub)
	if sub.ID == "" || !strings.HasPrefix(sub.Secret, "whsec_") {
		t.Fatalf("webhook add JSON: %s", out)
	}
	if code, out, errOut := runHere("webhook", "list", "--org", orgID); code != 0 || errOut != said || !strings.Contains(out, sub.ID) {
		t.Fatalf("webhook list beside dev: exit %d, %q %q", code, out, errOut)
	}

	// The environment and flags win over dev.json.
	t.Run("environment and flags win", func(t *testing.T) {
		bogus := settings
		bogus.DatabaseURL = "postgres://postgres@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=5"
		writeDevSettings(t, devDir, bogus)
		defer writeDevSettings(t, devDir, settings)
		if code, _, errOut := runHere("webhook", "list", "--org", orgID); code == 0 {
			t.Fatalf("dev.json's database is not used: %q", errOut)
		}
		if code, out, errOut := runHere("webhook", "list", "--org", orgID, "--database-url", d.URL); code != 0 || !strings.Contains(out, sub.ID) {
			t.Fatalf("--database-url does not win over dev.json: exit %d, %q", code, errOut)
		}
		t.Setenv("DATABASE_URL", d.URL)
		if code, out, errOut := runHere("webhook", "list", "--org", orgID); code != 0 || !strings.Contains(out, sub.ID) {
			t.Fatalf("DATABASE_URL does not win over dev.json: exit %d, %q", code, errOut)
		}
		add := []string{"webhook", "add", "--org", orgID, "--url", "http://127.0.0.1:9000/hook"}
		if code, _, errOut := runHere(append(add, "--allow-private-targets=false")...); code != 2 || !strings.Contains(errOut, "loopback") {
			t.Fatalf("--allow-private-targets=false does not win over dev.json: exit %d, %q", code, errOut)
		}
		t.Setenv("COMMERCE_ALLOW_PRIVATE_TARGETS", "false")
		if code, _, errOut := runHere(add...); code != 2 || !strings.Contains(errOut, "loopback") {
			t.Fatalf("COMMERCE_ALLOW_PRIVATE_TARGETS=false does not win over dev.json: exit %d, %q", code, errOut)
		}
		t.Setenv("COMMERCE_ALLOW_PRIVATE_TARGETS", "")
		t.Setenv("COMMERCE_SECRET_KEY", "not-a-key")
		if code, _, errOut := runHere(add...); code != 1 || !strings.Contains(errOut, "COMMERCE_SECRET_KEY") {
			t.Fatalf("COMMERCE_SECRET_KEY does not win over dev.json: exit %d, %q", code, errOut)
		}
	})

	// Elsewhere, --dev-dir names the directory; without it nothing is read.
	t.Chdir(t.TempDir())
	if code, out, errOut := runHere("--dev-dir", devDir, "webhook", "list", "--org", orgID); code != 0 ||
		errOut != "using commerce dev settings from "+filepath.Join(devDir, "dev.json")+"\n" || !strings.Contains(out, sub.ID) {
		t.Fatalf("--dev-dir: exit %d, %q %q", code, out, errOut)
	}
	if code, _, errOut := runHere("webhook", "list", "--org", orgID, "--database-url", d.URL); code != 0 || errOut != "" {
		t.Fatalf("without a dev.json: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runHere("--dev-dir", t.TempDir(), "webhook", "list", "--org", orgID); code != 1 || !strings.Contains(errOut, "dev.json") {
		t.Fatalf("--dev-dir without a dev.json: exit %d, %q", code, errOut)
	}
	// The processes are configured by their environment and flags alone.
	if code, _, errOut := runHere("--dev-dir", devDir, "worker"); code != 2 || !strings.Contains(errOut, "does not apply") {
		t.Fatalf("worker --dev-dir: exit %d, %q", code, errOut)
	}
}
