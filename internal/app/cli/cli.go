// Package cli is the `commerce` command: the processes (serve, worker,
// migrate) and the administration commands (docs/design.md#administration-commands). Every
// admin command prints a human table by default and JSON with --json;
// errors go to stderr with a non-zero exit.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/tracing"
)

// NewRoot returns the command tree without `dev` (which cmd/commerce adds,
// because it links the embedded Temporal server).
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "commerce",
		Short: "Organisation-scoped commerce REST API, inbound endpoints and webhooks",
		Long: "commerce runs the integration backend: the REST API and inbound endpoints (serve), the Temporal\n" +
			"worker (worker), schema migrations (migrate), and the administration commands below.\n\n" +
			"Configuration comes from environment variables; flags override them:\n" + envHelp() + "\n" +
			"Run beside `commerce dev`, the administration commands take what the environment and flags leave unset\n" +
			"(database, Temporal, secret key, base URL, private targets) from .commerce/dev.json, or from the dev.json\n" +
			"in --dev-dir, and say so on stderr.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	devSettingsFlag(root)
	root.AddCommand(serveCmd(), workerCmd(), migrateCmd(), orgCmd(), userCmd(), keyCmd(), seedCmd(), secretKeyCmd(), openAPICmd(), schemaCmd(), endpointCmd(), receiptsCmd(), webhookCmd(), auditCmd(), consoleCmd(), versionCmd())
	return root
}

func envHelp() string {
	s := ""
	for _, v := range config.Vars {
		def := v.Default
		if def == "" {
			def = "(none)"
		}
		s += fmt.Sprintf("  %-31s %s [default %s]\n", v.Name, v.Usage, def)
	}
	return s
}

// Execute runs root with args, with SIGINT and SIGTERM cancelling the
// command's context, and returns the process exit code.
func Execute(root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "commerce: %s\n", errorText(err))
		var usage usageError
		if errors.As(err, &usage) {
			return 2
		}
		return 1
	}
	return 0
}

// usageError marks a mistake in how a command was called.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errorText is the message for an error: domain errors carry their own.
func errorText(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Message
	}
	return err.Error()
}

// printer writes a command's result: JSON with --json, else a table.
type printer struct {
	w    io.Writer
	json bool
}

func newPrinter(cmd *cobra.Command) printer {
	j, _ := cmd.Flags().GetBool("json")
	return printer{w: cmd.OutOrStdout(), json: j}
}

// print writes v as indented JSON, or calls human with a tab writer.
func (p printer) print(v any, human func(w io.Writer)) error {
	if p.json {
		enc := json.NewEncoder(p.w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	human(tw)
	return tw.Flush()
}

func jsonFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("json", false, "print JSON instead of a table")
}

// ConnectDB opens the pools on the configured database, the main one sized
// by COMMERCE_DB_MAX_CONNS, their statements traced when tr is on.
func ConnectDB(ctx context.Context, cfg config.Config, tr *tracing.Tracing) (*db.DB, error) {
	n, err := cfg.MaxConns()
	if err != nil {
		return nil, err
	}
	return db.ConnectWith(ctx, cfg.DatabaseURL, db.Options{MaxConns: n, Tracer: tr.SQL()})
}

// connectAPI opens the pools of `commerce serve`: sized like ConnectDB's,
// and a statement waits COMMERCE_DB_ACQUIRE_WAIT at most for a connection,
// so that a full pool answers 503 at once instead of holding requests.
func connectAPI(ctx context.Context, cfg config.Config, tr *tracing.Tracing) (*db.DB, error) {
	n, err := cfg.MaxConns()
	if err != nil {
		return nil, err
	}
	wait, err := cfg.AcquireWait()
	if err != nil {
		return nil, err
	}
	return db.ConnectWith(ctx, cfg.DatabaseURL, db.Options{MaxConns: n, AcquireWait: wait, Tracer: tr.SQL()})
}

// openDB connects to the configured database and checks that its schema is
// at least the one this binary expects. A schema ahead is taken: migrations
// only add (docs/versioning.md), so a process of the previous release that
// restarts during a rolling upgrade comes back instead of refusing.
func openDB(ctx context.Context, cfg config.Config, tr *tracing.Tracing) (*db.DB, error) {
	d, err := ConnectDB(ctx, cfg, tr)
	if err != nil {
		return nil, err
	}
	v, err := d.SchemaVersion(ctx)
	if err != nil || v < db.LatestVersion() {
		d.Close()
		if err != nil {
			return nil, fmt.Errorf("the database has no commerce schema (run `commerce migrate`): %w", err)
		}
		return nil, fmt.Errorf("the database schema is at version %d but this binary expects %d: run `commerce migrate`", v, db.LatestVersion())
	}
	return d, nil
}

// withDB runs fn with the configured database open.
func withDB(cmd *cobra.Command, cfg config.Config, fn func(ctx context.Context, d *db.DB) error) error {
	d, err := openDB(cmd.Context(), cfg, nil)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(cmd.Context(), d)
}

// printFromDB runs load with the configured database open and prints what it
// returns, as JSON with --json or else by table; nothing is printed when load
// fails.
func printFromDB[T any](cmd *cobra.Command, cfg config.Config, load func(context.Context, *db.DB) (T, error), table func(io.Writer, T)) error {
	return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
		v, err := load(ctx, d)
		if err != nil {
			return err
		}
		return newPrinter(cmd).print(v, func(w io.Writer) { table(w, v) })
	})
}

// orgListCmd is `list --org ORG`: the organisation's records, as load (a
// method of db.DB) finds them, printed as JSON or by table.
func orgListCmd[T any](short string, load func(*db.DB, context.Context, uuid.UUID) (T, error), table func(io.Writer, T)) *cobra.Command {
	cfg := config.Load()
	var org string
	cmd := &cobra.Command{
		Use:   "list --org ORG",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			return printFromDB(cmd, cfg, func(ctx context.Context, d *db.DB) (T, error) { return load(d, ctx, orgID) }, table)
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	_ = cmd.MarkFlagRequired("org")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

// recordCmd is `VERB RECORD_ID` (use names both): run (a method of db.DB)
// finds, or changes, the record by its id, and the result is printed as JSON
// or by table.
func recordCmd[T any](use, short string, run func(*db.DB, context.Context, uuid.UUID) (T, error), table func(io.Writer, T)) *cobra.Command {
	cfg := config.Load()
	_, idName, _ := strings.Cut(use, " ")
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(idName, args[0])
			if err != nil {
				return err
			}
			return printFromDB(cmd, cfg, func(ctx context.Context, d *db.DB) (T, error) { return run(d, ctx, id) }, table)
		},
	}
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

// ownerLookup finds the organisation of a record named by id alone (a
// method of db.DB such as EndpointOrg).
type ownerLookup func(*db.DB, context.Context, uuid.UUID) (uuid.UUID, error)

// orgFlag adds --org to a command that names a record by its id.
func orgFlag(cmd *cobra.Command, org *string) {
	cmd.Flags().StringVar(org, "org", "", "the record's organisation id (looked up from the record when not given)")
}

// recordOrg is the organisation a record-id command acts within: --org when
// given, else the record's own, as owner finds it. Either way the command's
// query is then scoped by it, as every query is.
func recordOrg(ctx context.Context, d *db.DB, org string, owner ownerLookup, id uuid.UUID) (uuid.UUID, error) {
	if org != "" {
		return parseID("--org", org)
	}
	return owner(d, ctx, id)
}

// orgRecordCmd is recordCmd for a record whose query is scoped by its
// organisation (see recordOrg).
func orgRecordCmd[T any](use, short string, owner ownerLookup, run func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (T, error), table func(io.Writer, T)) *cobra.Command {
	var org string
	cmd := recordCmd(use, short, func(d *db.DB, ctx context.Context, id uuid.UUID) (T, error) {
		orgID, err := recordOrg(ctx, d, org, owner, id)
		if err != nil {
			var zero T
			return zero, err
		}
		return run(d, ctx, orgID, id)
	}, table)
	orgFlag(cmd, &org)
	return cmd
}

// dbFlags adds --database-url to a command that only talks to Postgres.
func dbFlags(cmd *cobra.Command, cfg *config.Config) {
	cfg.Flags(cmd.Flags(), "DATABASE_URL")
}

func tsOrDash(t *domain.Timestamp) string {
	if t == nil {
		return "-"
	}
	return t.String()
}

// answering wraps a record command's run so that it returns the record's
// answer (an api type): the command's JSON is then the REST answer's.
func answering[R, A any](run func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (R, error), answer func(R) A) func(*db.DB, context.Context, uuid.UUID, uuid.UUID) (A, error) {
	return func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (A, error) {
		r, err := run(d, ctx, orgID, id)
		if err != nil {
			var zero A
			return zero, err
		}
		return answer(r), nil
	}
}
