// Package config reads the service's configuration from environment
// variables, with command-line flags as overrides.
package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// Config is everything the processes need to know about their surroundings.
type Config struct {
	DatabaseURL string
	DBMaxConns  string
	// DBAcquireWait bounds an API request's wait for a free connection.
	DBAcquireWait     string
	TemporalAddress   string
	TemporalNamespace string
	Listen            string
	BaseURL           string
	SecretKey         string
	NightlyAt         string
	LogLevel          string
	LogFormat         string
	// TemporalUIURL is the Temporal Web UI's address, for links to a
	// receipt's workflow ("" for none).
	TemporalUIURL string
	// RetentionDays is how long receipts and delivery attempts are kept.
	RetentionDays string
	// PrivateTargets says which non-public addresses outbound webhooks may
	// reach: false (none), loopback (commerce dev's default) or true (all).
	PrivateTargets string
	// MetricsListen is the address of the /metrics listener ("" for none).
	MetricsListen string
	// MaxConnections caps the HTTP connections one process holds at once.
	MaxConnections string
	// Console says whether the support console is served at /console.
	Console string
	// Pprof says whether net/http/pprof's profiles are served under
	// /debug/pprof/ on the metrics listener (never on the public one).
	Pprof string
}

// Var describes one environment variable.
type Var struct {
	Name    string
	Default string
	Usage   string
	flag    string
	field   func(*Config) *string
}

// Vars lists every environment variable the binary reads.
var Vars = []Var{
	{Name: "DATABASE_URL", Default: "postgres://postgres@127.0.0.1:5432/commerce?sslmode=disable",
		Usage: "Postgres connection URL", flag: "database-url", field: func(c *Config) *string { return &c.DatabaseURL }},
	{Name: "COMMERCE_DB_MAX_CONNS", Default: "20",
		Usage: "most connections a process's main Postgres pool opens (rate limiting adds a quarter, at least 4)", flag: "db-max-conns",
		field: func(c *Config) *string { return &c.DBMaxConns }},
	{Name: "COMMERCE_DB_ACQUIRE_WAIT", Default: "2s",
		Usage: "how long an API request waits for a free database connection before it is answered 503 (0: as long as the request)", flag: "db-acquire-wait",
		field: func(c *Config) *string { return &c.DBAcquireWait }},
	{Name: "TEMPORAL_ADDRESS", Default: "127.0.0.1:7233",
		Usage: "Temporal frontend host:port", flag: "temporal-address", field: func(c *Config) *string { return &c.TemporalAddress }},
	{Name: "TEMPORAL_NAMESPACE", Default: "default",
		Usage: "Temporal namespace", flag: "temporal-namespace", field: func(c *Config) *string { return &c.TemporalNamespace }},
	{Name: "COMMERCE_LISTEN", Default: ":8080",
		Usage: "HTTP listen address", flag: "listen", field: func(c *Config) *string { return &c.Listen }},
	{Name: "COMMERCE_BASE_URL", Default: "http://localhost:8080",
		Usage: "public base URL (the base of every link the service writes)", flag: "base-url", field: func(c *Config) *string { return &c.BaseURL }},
	{Name: "COMMERCE_SECRET_KEY", Default: "",
		Usage: "32-byte key (64 hex digits or base64) sealing secrets and signing cursors", flag: "secret-key",
		field: func(c *Config) *string { return &c.SecretKey }},
	{Name: "COMMERCE_NIGHTLY_AT", Default: "02:00",
		Usage: "UTC time of day (HH:MM) of the nightly webhook retry run", flag: "nightly-at",
		field: func(c *Config) *string { return &c.NightlyAt }},
	{Name: "COMMERCE_LOG_LEVEL", Default: "info",
		Usage: "log level: debug, info, warn, error", flag: "log-level", field: func(c *Config) *string { return &c.LogLevel }},
	{Name: "COMMERCE_LOG_FORMAT", Default: "json",
		Usage: "log format: json or console", flag: "log-format", field: func(c *Config) *string { return &c.LogFormat }},
	{Name: "COMMERCE_TEMPORAL_UI_URL", Default: "",
		Usage: "Temporal Web UI address, for links to a receipt's workflow (dev sets it)", flag: "temporal-ui-url",
		field: func(c *Config) *string { return &c.TemporalUIURL }},
	{Name: "COMMERCE_RETENTION_DAYS", Default: "90",
		Usage: "days inbound receipts and webhook delivery attempts are kept (events: 30)", flag: "retention-days",
		field: func(c *Config) *string { return &c.RetentionDays }},
	{Name: "COMMERCE_ALLOW_PRIVATE_TARGETS", Default: "false",
		Usage: "which non-public addresses webhooks may reach: false (none), loopback, or true (private, loopback and link-local alike)",
		flag:  "allow-private-targets", field: func(c *Config) *string { return &c.PrivateTargets }},
	{Name: "COMMERCE_METRICS_LISTEN", Default: "127.0.0.1:9090",
		Usage: "address of the /metrics listener, apart from the public one (empty: no metrics listener)", flag: "metrics-listen",
		field: func(c *Config) *string { return &c.MetricsListen }},
	{Name: "COMMERCE_MAX_CONNECTIONS", Default: "1024",
		Usage: "most HTTP connections the process holds at once; at the cap the connection idle the longest is closed for a new one, and with none idle more wait to be accepted", flag: "max-connections",
		field: func(c *Config) *string { return &c.MaxConnections }},
	{Name: "COMMERCE_CONSOLE", Default: "true",
		Usage: "serve the support console at /console (serve and dev): true or false", flag: "console",
		field: func(c *Config) *string { return &c.Console }},
	{Name: "COMMERCE_PPROF", Default: "false",
		Usage: "serve Go's runtime profiles (net/http/pprof) under /debug/pprof/ on the metrics listener, never the public one: true or false", flag: "pprof",
		field: func(c *Config) *string { return &c.Pprof }},
}

// Names returns the names of every environment variable the binary reads.
func Names() []string {
	out := make([]string, len(Vars))
	for i, v := range Vars {
		out[i] = v.Name
	}
	return out
}

// Load reads the environment into a Config with defaults applied.
func Load() Config {
	var c Config
	for _, v := range Vars {
		val, ok := os.LookupEnv(v.Name)
		if !ok || val == "" {
			val = v.Default
		}
		if v.field != nil {
			*v.field(&c) = val
		}
	}
	return c
}

// Flags registers an override flag for each of the named settings on fs,
// bound to c. Flags that are not given leave the environment's value.
func (c *Config) Flags(fs *pflag.FlagSet, names ...string) {
	for _, v := range Vars {
		for _, n := range names {
			if n != v.Name {
				continue
			}
			p := v.field(c)
			fs.StringVar(p, v.flag, *p, v.Usage+" (env "+v.Name+")")
			if v.Name == "COMMERCE_ALLOW_PRIVATE_TARGETS" || v.Name == "COMMERCE_PPROF" {
				fs.Lookup(v.flag).NoOptDefVal = "true" // --allow-private-targets, --pprof alone
			}
		}
	}
	boundMu.Lock()
	bound[fs] = c
	boundMu.Unlock()
}

// bound is the Config each flag set's flags write to, so that UseDev can
// fill it in once the flags are parsed.
var (
	boundMu sync.Mutex
	bound   = map[*pflag.FlagSet]*Config{}
)

// DevSettings are the settings `commerce dev` keeps in its dev.json for the
// commands run beside it.
type DevSettings struct {
	DatabaseURL       string `json:"database_url"`
	TemporalAddress   string `json:"temporal_address"`
	TemporalNamespace string `json:"temporal_namespace"`
	TemporalUIURL     string `json:"temporal_ui_url"`
	BaseURL           string `json:"base_url"`
	SecretKey         string `json:"secret_key"`
	// PrivateTargets is dev's COMMERCE_ALLOW_PRIVATE_TARGETS (loopback
	// unless dev was told otherwise).
	PrivateTargets string `json:"private_targets,omitempty"`
	// AllowPrivateTargets is what a dev.json written before PrivateTargets
	// says; it is read as loopback.
	AllowPrivateTargets bool `json:"allow_private_targets,omitempty"`
}

// UseDev fills in, in the Config whose flags fs holds, each setting of s
// that neither its environment variable nor a flag given on fs sets, and
// reports whether it filled any. A Config with no flags on fs is left alone.
func UseDev(fs *pflag.FlagSet, s DevSettings) bool {
	boundMu.Lock()
	c := bound[fs]
	boundMu.Unlock()
	if c == nil {
		return false
	}
	given := func(name string) bool {
		if os.Getenv(name) != "" {
			return true
		}
		for _, v := range Vars {
			if v.Name == name {
				return fs.Changed(v.flag)
			}
		}
		return false
	}
	used := false
	for name, val := range map[string]string{
		"DATABASE_URL":             s.DatabaseURL,
		"TEMPORAL_ADDRESS":         s.TemporalAddress,
		"TEMPORAL_NAMESPACE":       s.TemporalNamespace,
		"COMMERCE_TEMPORAL_UI_URL": s.TemporalUIURL,
		"COMMERCE_BASE_URL":        s.BaseURL,
		"COMMERCE_SECRET_KEY":      s.SecretKey,
	} {
		if val == "" || given(name) {
			continue
		}
		for _, v := range Vars {
			if v.Name == name {
				*v.field(c) = val
				used = true
			}
		}
	}
	targets := s.PrivateTargets
	if targets == "" && s.AllowPrivateTargets {
		targets = outbound.LoopbackTargets.String()
	}
	if targets != "" && !given("COMMERCE_ALLOW_PRIVATE_TARGETS") {
		c.PrivateTargets = targets
		used = true
	}
	return used
}

// Targets reads PrivateTargets: which addresses outbound webhooks may reach.
func (c Config) Targets() (outbound.Targets, error) { return outbound.ParseTargets(c.PrivateTargets) }

// Connections parses MaxConnections (1 to 1,000,000).
func (c Config) Connections() (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(c.MaxConnections))
	if err != nil || n < 1 || n > 1_000_000 {
		return 0, fmt.Errorf("COMMERCE_MAX_CONNECTIONS %q is not a number from 1 to 1000000", c.MaxConnections)
	}
	return n, nil
}

// ConsoleOn says whether the support console is served.
func (c Config) ConsoleOn() (bool, error) {
	if c.Console == "" {
		return true, nil
	}
	on, err := strconv.ParseBool(c.Console)
	if err != nil {
		return false, fmt.Errorf("COMMERCE_CONSOLE is %q, not true or false", c.Console)
	}
	return on, nil
}

// ProfilesOn says whether the runtime profiles are served on the metrics
// listener (off unless COMMERCE_PPROF is true).
func (c Config) ProfilesOn() (bool, error) {
	if c.Pprof == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(c.Pprof)
	if err != nil {
		return false, fmt.Errorf("COMMERCE_PPROF is %q, not true or false", c.Pprof)
	}
	return on, nil
}

// ServiceKey parses the secret key; it is required by whatever seals
// secrets or signs cursors.
func (c Config) ServiceKey() ([]byte, error) {
	if c.SecretKey == "" {
		return nil, fmt.Errorf("COMMERCE_SECRET_KEY is not set (generate one with `commerce secret-key`)")
	}
	k, err := secrets.ParseServiceKey(c.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("COMMERCE_SECRET_KEY: %w", err)
	}
	return k, nil
}

// MaxConns parses DBMaxConns: the most connections the main Postgres pool
// opens, 1 to 1000.
func (c Config) MaxConns() (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(c.DBMaxConns), 10, 32)
	if err != nil || n < 1 || n > 1000 {
		return 0, fmt.Errorf("COMMERCE_DB_MAX_CONNS %q is not a number from 1 to 1000", c.DBMaxConns)
	}
	return int32(n), nil
}

// AcquireWait parses DBAcquireWait: a duration from 0 to 1 minute.
func (c Config) AcquireWait() (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(c.DBAcquireWait))
	if strings.TrimSpace(c.DBAcquireWait) == "0" {
		d, err = 0, nil
	}
	if err != nil || d < 0 || d > time.Minute {
		return 0, fmt.Errorf("COMMERCE_DB_ACQUIRE_WAIT %q is not a duration from 0 to 1m (such as 2s)", c.DBAcquireWait)
	}
	return d, nil
}

// Retention parses RetentionDays: how long receipts and delivery attempts
// are kept, 1 to 3650 days.
func (c Config) Retention() (time.Duration, error) {
	n, err := strconv.Atoi(strings.TrimSpace(c.RetentionDays))
	if err != nil || n < 1 || n > 3650 {
		return 0, fmt.Errorf("COMMERCE_RETENTION_DAYS %q is not a number of days from 1 to 3650", c.RetentionDays)
	}
	return time.Duration(n) * 24 * time.Hour, nil
}

// Delivery is the webhook delivery policy: its nightly run at NightlyAt.
func (c Config) Delivery() (domain.DeliveryPolicy, error) {
	at, err := c.Nightly()
	return domain.NewDeliveryPolicy(at), err
}

// Nightly parses NightlyAt ("HH:MM", UTC) into an offset from midnight.
func (c Config) Nightly() (time.Duration, error) {
	h, m, ok := strings.Cut(c.NightlyAt, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 || len(m) != 2 {
		return 0, fmt.Errorf("COMMERCE_NIGHTLY_AT %q is not HH:MM (UTC)", c.NightlyAt)
	}
	return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute, nil
}
