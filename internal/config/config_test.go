package config

import (
	"testing"
	"time"

	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/spf13/pflag"
)

func TestLoadAppliesDefaultsAndEnvironment(t *testing.T) {
	for _, n := range Names() {
		t.Setenv(n, "")
	}
	c := Load()
	if c.TemporalNamespace != "default" || c.NightlyAt != "02:00" || c.Listen != ":8080" || c.PrivateTargets != "false" {
		t.Fatalf("defaults not applied: %+v", c)
	}
	t.Setenv("TEMPORAL_NAMESPACE", "commerce")
	t.Setenv("COMMERCE_ALLOW_PRIVATE_TARGETS", "true")
	c = Load()
	if targets, err := c.Targets(); c.TemporalNamespace != "commerce" || err != nil || targets != outbound.AnyTarget {
		t.Fatalf("environment not read: %+v", c)
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	t.Setenv("COMMERCE_LISTEN", ":9000")
	c := Load()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.Flags(fs, "COMMERCE_LISTEN", "DATABASE_URL")
	if err := fs.Parse([]string{"--listen", ":9100"}); err != nil {
		t.Fatal(err)
	}
	if c.Listen != ":9100" {
		t.Fatalf("flag did not override: %q", c.Listen)
	}
	if fs.Lookup("temporal-address") != nil {
		t.Fatal("a flag was registered that was not asked for")
	}
}

func TestNightly(t *testing.T) {
	c := Config{NightlyAt: "02:30"}
	if d, err := c.Nightly(); err != nil || d != 2*time.Hour+30*time.Minute {
		t.Fatalf("Nightly = %v, %v", d, err)
	}
	for _, bad := range []string{"2", "24:00", "02:60", "ab:cd", "02:5"} {
		if _, err := (Config{NightlyAt: bad}).Nightly(); err == nil {
			t.Errorf("Nightly(%q) accepted", bad)
		}
	}
}

func TestServiceKeyRequired(t *testing.T) {
	if _, err := (Config{}).ServiceKey(); err == nil {
		t.Fatal("empty key accepted")
	}
}

func TestMaxConnsDefaultsTo20AndIsChecked(t *testing.T) {
	t.Setenv("COMMERCE_DB_MAX_CONNS", "")
	if n, err := Load().MaxConns(); err != nil || n != 20 {
		t.Fatalf("default MaxConns = %d, %v", n, err)
	}
	t.Setenv("COMMERCE_DB_MAX_CONNS", "50")
	if n, err := Load().MaxConns(); err != nil || n != 50 {
		t.Fatalf("MaxConns = %d, %v", n, err)
	}
	for _, bad := range []string{"0", "-1", "1001", "many", "2147483648"} {
		if _, err := (Config{DBMaxConns: bad}).MaxConns(); err == nil {
			t.Errorf("MaxConns(%q) accepted", bad)
		}
	}
}

func TestAcquireWaitDefaultsTo2sAndIsChecked(t *testing.T) {
	t.Setenv("COMMERCE_DB_ACQUIRE_WAIT", "")
	if d, err := Load().AcquireWait(); err != nil || d != 2*time.Second {
		t.Fatalf("default AcquireWait = %v, %v", d, err)
	}
	for in, want := range map[string]time.Duration{"0": 0, "500ms": 500 * time.Millisecond, "1m": time.Minute} {
		if d, err := (Config{DBAcquireWait: in}).AcquireWait(); err != nil || d != want {
			t.Errorf("AcquireWait(%q) = %v, %v; want %v", in, d, err, want)
		}
	}
	for _, bad := range []string{"-1s", "61s", "2", "soon", ""} {
		if _, err := (Config{DBAcquireWait: bad}).AcquireWait(); err == nil {
			t.Errorf("AcquireWait(%q) accepted", bad)
		}
	}
}

func TestUseDevFillsOnlyWhatNeitherEnvironmentNorFlagsSet(t *testing.T) {
	for _, n := range Names() {
		t.Setenv(n, "")
	}
	t.Setenv("TEMPORAL_ADDRESS", "temporal.env:7233")
	dev := DevSettings{DatabaseURL: "postgres://dev/db", TemporalAddress: "127.0.0.1:7299", TemporalNamespace: "dev-ns",
		TemporalUIURL: "http://127.0.0.1:8299", BaseURL: "http://127.0.0.1:8099", SecretKey: "dev-key", PrivateTargets: "loopback"}

	c := Load()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.Flags(fs, "DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "COMMERCE_ALLOW_PRIVATE_TARGETS")
	if err := fs.Parse([]string{"--temporal-namespace", "flag-ns"}); err != nil {
		t.Fatal(err)
	}
	if !UseDev(fs, dev) {
		t.Fatal("UseDev reports nothing used")
	}
	want := Config{DatabaseURL: "postgres://dev/db", TemporalAddress: "temporal.env:7233", TemporalNamespace: "flag-ns",
		TemporalUIURL: "http://127.0.0.1:8299", BaseURL: "http://127.0.0.1:8099", SecretKey: "dev-key", PrivateTargets: "loopback"}
	if c.DatabaseURL != want.DatabaseURL || c.TemporalAddress != want.TemporalAddress || c.TemporalNamespace != want.TemporalNamespace ||
		c.TemporalUIURL != want.TemporalUIURL || c.BaseURL != want.BaseURL || c.SecretKey != want.SecretKey || c.PrivateTargets != want.PrivateTargets {
		t.Fatalf("after UseDev: %+v, want %+v", c, want)
	}

	// A flag that turns private targets off wins; so does the environment.
	c = Load()
	fs = pflag.NewFlagSet("y", pflag.ContinueOnError)
	c.Flags(fs, "COMMERCE_ALLOW_PRIVATE_TARGETS")
	_ = fs.Parse([]string{"--allow-private-targets=false"})
	UseDev(fs, dev)
	if c.PrivateTargets != "false" {
		t.Fatal("--allow-private-targets=false lost to dev.json")
	}
	t.Setenv("COMMERCE_ALLOW_PRIVATE_TARGETS", "false")
	c = Load()
	fs = pflag.NewFlagSet("z", pflag.ContinueOnError)
	c.Flags(fs, "DATABASE_URL")
	UseDev(fs, dev)
	if c.PrivateTargets != "false" {
		t.Fatal("COMMERCE_ALLOW_PRIVATE_TARGETS=false lost to dev.json")
	}

	// A flag set no Config is bound to is left alone.
	if UseDev(pflag.NewFlagSet("none", pflag.ContinueOnError), dev) {
		t.Fatal("UseDev filled a Config it does not know")
	}
}

func TestPprofIsOffByDefaultAndOnWithTheFlagAlone(t *testing.T) {
	t.Setenv("COMMERCE_PPROF", "")
	c := Load()
	if on, err := c.ProfilesOn(); on || err != nil {
		t.Fatalf("default: %v %v, want off", on, err)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.Flags(fs, "COMMERCE_PPROF")
	if err := fs.Parse([]string{"--pprof"}); err != nil {
		t.Fatal(err)
	}
	if on, err := c.ProfilesOn(); !on || err != nil {
		t.Fatalf("--pprof: %v %v, want on", on, err)
	}
}
