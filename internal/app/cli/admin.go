package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/secrets"
)

func parseID(what, s string) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil {
		return uuid.Nil, usagef("%s %q is not an id (a UUID)", what, s)
	}
	return id, nil
}

func orgCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "org", Short: "Create organisations, switch their add-ons, set their match tolerances, subscription caps and identity providers"}
	cmd.AddCommand(orgCreateCmd(), orgAddonCmd(), orgTolerancesCmd(), orgSubscriptionCapCmd(), orgSSOCmd())
	return cmd
}

// orgJSON is `org create --json`: id, name, currency, owner_id (plus the plan).
type orgJSON struct {
	ID         uuid.UUID  `json:"id"`
	Name       string     `json:"name"`
	Currency   string     `json:"currency"`
	OwnerID    *uuid.UUID `json:"owner_id"`
	ProductCap int        `json:"product_cap"`
	Addons     []string   `json:"addons"`
}

func newOrgJSON(o domain.Organisation, owner *domain.User) orgJSON {
	j := orgJSON{ID: o.ID, Name: o.Name, Currency: o.Currency, ProductCap: o.ProductCap, Addons: []string{}}
	if owner != nil {
		j.OwnerID = &owner.ID
	}
	for _, a := range domain.Addons {
		if o.AddonOn(a) {
			j.Addons = append(j.Addons, string(a))
		}
	}
	return j
}

func orgCreateCmd() *cobra.Command {
	cfg := config.Load()
	var name, currency, owner string
	var productCap int
	cmd := &cobra.Command{
		Use:   "create --name NAME [--currency GBP] [--owner-email E] [--product-cap N]",
		Short: "Create an organisation (and its owner)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if strings.TrimSpace(name) == "" {
				return usagef("--name is required")
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				in := db.NewOrganisation{Name: name, Currency: strings.ToUpper(currency), OwnerEmail: owner}
				if cmd.Flags().Changed("product-cap") {
					in.ProductCap = &productCap
				}
				org, user, err := d.CreateOrganisation(ctx, in)
				if err != nil {
					return err
				}
				return newPrinter(cmd).print(newOrgJSON(org, user), func(w io.Writer) {
					fmt.Fprintf(w, "organisation\t%s\nid\t%s\ncurrency\t%s\nproduct cap\t%d\n", org.Name, org.ID, org.Currency, org.ProductCap)
					if user != nil {
						fmt.Fprintf(w, "owner\t%s (%s)\n", user.Email, user.ID)
					}
				})
			})
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "organisation name (required)")
	cmd.Flags().StringVar(&currency, "currency", "GBP", "ISO 4217 currency code")
	cmd.Flags().StringVar(&owner, "owner-email", "", "create the owner with this email")
	cmd.Flags().IntVar(&productCap, "product-cap", 100000, "the plan's product cap")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

// tolerancesJSON is `org tolerances --json`.
type tolerancesJSON struct {
	OrgID       uuid.UUID `json:"org_id"`
	Qty         float64   `json:"qty"`
	AmountPct   float64   `json:"amount_pct"`
	AmountMinor int64     `json:"amount_minor"`
}

func orgTolerancesCmd() *cobra.Command {
	cfg := config.Load()
	var org string
	var t domain.Tolerances
	cmd := &cobra.Command{
		Use:   "tolerances --org ORG [--qty N] [--amount-pct P] [--amount-minor M]",
		Short: "Show or change the organisation's three-way match tolerances",
		Long: "tolerances shows how far a supplier invoice may differ from the goods received before a variance is raised:\n" +
			"--qty units per quantity compared, and an amount by the larger of --amount-pct percent and --amount-minor minor\n" +
			"units (defaults 0, 1 and 100). Flags that are given change those tolerances; the others stay.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			tolerances := func(ctx context.Context, d *db.DB) (tolerancesJSON, error) {
				cur, err := d.Tolerances(ctx, orgID)
				if err != nil {
					return tolerancesJSON{}, err
				}
				f := cmd.Flags()
				if f.Changed("qty") || f.Changed("amount-pct") || f.Changed("amount-minor") {
					if f.Changed("qty") {
						cur.Qty = t.Qty
					}
					if f.Changed("amount-pct") {
						cur.AmountPct = t.AmountPct
					}
					if f.Changed("amount-minor") {
						cur.AmountMinor = t.AmountMinor
					}
					if cur, err = d.SetTolerances(ctx, orgID, cur); err != nil {
						return tolerancesJSON{}, err
					}
				}
				return tolerancesJSON{OrgID: orgID, Qty: cur.Qty, AmountPct: cur.AmountPct, AmountMinor: cur.AmountMinor}, nil
			}
			return printFromDB(cmd, cfg, tolerances, func(w io.Writer, out tolerancesJSON) {
				fmt.Fprintf(w, "organisation\t%s\nquantity\t%g units\namount\tthe larger of %g %% and %d minor units\n",
					out.OrgID, out.Qty, out.AmountPct, out.AmountMinor)
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().Float64Var(&t.Qty, "qty", 0, "units an invoiced quantity may differ by")
	cmd.Flags().Float64Var(&t.AmountPct, "amount-pct", 1, "percent of the expected amount an invoice may differ by")
	cmd.Flags().Int64Var(&t.AmountMinor, "amount-minor", 100, "minor units an invoice may differ by, at least")
	_ = cmd.MarkFlagRequired("org")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

// subscriptionCapJSON is `org subscription-cap --json`.
type subscriptionCapJSON struct {
	OrgID uuid.UUID `json:"org_id"`
	db.SubscriptionCap
}

func orgSubscriptionCapCmd() *cobra.Command {
	cfg := config.Load()
	var org string
	var limit int
	cmd := &cobra.Command{
		Use:   "subscription-cap --org ORG [--set N]",
		Short: "Show or change how many webhook subscriptions the organisation may hold",
		Long: "subscription-cap shows the organisation's cap on webhook subscriptions (" + strconv.Itoa(db.DefaultSubscriptionCap) +
			" unless set) and how many it holds;\n" +
			"--set N (0 to 100000) changes the cap. A subscription past the cap is refused 422 (the API) or with an error (the CLI\n" +
			"and the console); lowering the cap removes none, the organisation adds none until it is under it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			show := func(ctx context.Context, d *db.DB) (subscriptionCapJSON, error) {
				var c db.SubscriptionCap
				var err error
				if cmd.Flags().Changed("set") {
					c, err = d.SetSubscriptionCap(ctx, orgID, limit)
				} else {
					c, err = d.GetSubscriptionCap(ctx, orgID)
				}
				return subscriptionCapJSON{OrgID: orgID, SubscriptionCap: c}, err
			}
			return printFromDB(cmd, cfg, show, func(w io.Writer, out subscriptionCapJSON) {
				fmt.Fprintf(w, "organisation\t%s\nsubscription cap\t%d\nsubscriptions\t%d\n", out.OrgID, out.Cap, out.Held)
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().IntVar(&limit, "set", db.DefaultSubscriptionCap, "the most webhook subscriptions the organisation may hold")
	_ = cmd.MarkFlagRequired("org")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

func orgAddonCmd() *cobra.Command {
	cfg := config.Load()
	var org string
	cmd := &cobra.Command{
		Use:   "addon --org ORG (stock|route|source) (on|off)",
		Short: "Switch an add-on on or off",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			addon := domain.Addon(strings.ToLower(args[0]))
			var on bool
			switch strings.ToLower(args[1]) {
			case "on":
				on = true
			case "off":
			default:
				return usagef("the second argument must be on or off, not %q", args[1])
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				o, err := d.SetAddon(ctx, orgID, addon, on)
				if err != nil {
					return err
				}
				return newPrinter(cmd).print(newOrgJSON(o, nil), func(w io.Writer) {
					fmt.Fprintf(w, "organisation\t%s\nstock\t%s\nroute\t%s\nsource\t%s\n", o.ID, onOff(o.Stock), onOff(o.Route), onOff(o.Source))
				})
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	_ = cmd.MarkFlagRequired("org")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func userCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Add people to organisations, disable and enable them"}
	cmd.AddCommand(userDisableCmd(true), userDisableCmd(false))
	cfg := config.Load()
	var org, email, role string
	add := &cobra.Command{
		Use:   "add --org ORG --email E --role owner|admin|member",
		Short: "Add a person to an organisation",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			add := func(ctx context.Context, d *db.DB) (domain.User, error) {
				return d.AddUser(ctx, orgID, email, domain.UserRole(strings.ToLower(role)))
			}
			return printFromDB(cmd, cfg, add, func(w io.Writer, u domain.User) {
				fmt.Fprintf(w, "user\t%s\nid\t%s\nrole\t%s\norganisation\t%s\n", u.Email, u.ID, u.Role, u.OrgID)
			})
		},
	}
	add.Flags().StringVar(&org, "org", "", "organisation id (required)")
	add.Flags().StringVar(&email, "email", "", "email address (required)")
	add.Flags().StringVar(&role, "role", "", "owner, admin or member (required)")
	for _, f := range []string{"org", "email", "role"} {
		_ = add.MarkFlagRequired(f)
	}
	jsonFlag(add)
	dbFlags(add, &cfg)
	cmd.AddCommand(add)
	return cmd
}

func keyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "Create, list and revoke API keys"}
	cmd.AddCommand(keyCreateCmd(), keyListCmd(), keyRevokeCmd())
	return cmd
}

// keyCreateJSON is `key create --json`: the key is shown this once.
type keyCreateJSON struct {
	ID     uuid.UUID      `json:"id"`
	Key    string         `json:"key"`
	Prefix string         `json:"prefix"`
	Scopes []domain.Scope `json:"scopes"`
	OrgID  uuid.UUID      `json:"org_id"`
	Name   string         `json:"name"`
}

func keyCreateCmd() *cobra.Command {
	cfg := config.Load()
	var org, name, scopes string
	cmd := &cobra.Command{
		Use:   "create --org ORG --name NAME --scopes s1,s2|all",
		Short: "Create an API key (printed once; only its hash is stored)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			sc, err := domain.ParseScopes(scopes)
			if err != nil {
				return err
			}
			create := func(ctx context.Context, d *db.DB) (keyCreateJSON, error) {
				k, plain, err := d.CreateAPIKey(ctx, orgID, name, sc)
				return keyCreateJSON{ID: k.ID, Key: plain, Prefix: k.Prefix, Scopes: k.Scopes, OrgID: k.OrgID, Name: k.Name}, err
			}
			return printFromDB(cmd, cfg, create, func(w io.Writer, k keyCreateJSON) {
				fmt.Fprintf(w, "key\t%s\nid\t%s\nscopes\t%s\n\nThe key is shown once and only its hash is stored: keep it now.\n",
					k.Key, k.ID, joinScopes(k.Scopes))
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().StringVar(&name, "name", "", "what the key is for (required)")
	cmd.Flags().StringVar(&scopes, "scopes", "", "comma-separated scopes, or all (required)")
	for _, f := range []string{"org", "name", "scopes"} {
		_ = cmd.MarkFlagRequired(f)
	}
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

func joinScopes(scopes []domain.Scope) string {
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}

func keyListCmd() *cobra.Command {
	return orgListCmd("List an organisation's API keys (never the keys themselves)", (*db.DB).ListAPIKeys,
		func(w io.Writer, keys []domain.APIKey) {
			fmt.Fprintln(w, "ID\tNAME\tPREFIX\tSCOPES\tCREATED\tLAST USED\tREVOKED")
			for _, k := range keys {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, joinScopes(k.Scopes),
					k.CreatedAt, tsOrDash(k.LastUsedAt), tsOrDash(k.RevokedAt))
			}
		})
}

func keyRevokeCmd() *cobra.Command {
	return orgRecordCmd("revoke KEY_ID", "Revoke an API key; calls with it answer 401 from then on", (*db.DB).APIKeyOrg, (*db.DB).RevokeAPIKey,
		func(w io.Writer, k domain.APIKey) {
			fmt.Fprintf(w, "revoked\t%s (%s)\nat\t%s\n", k.ID, k.Name, tsOrDash(k.RevokedAt))
		})
}

func seedCmd() *cobra.Command {
	cfg := config.Load()
	var org, file string
	cmd := &cobra.Command{
		Use:   "seed --org ORG --file data.json",
		Short: "Load customers, products, quotes, orders, suppliers, purchase orders, deliveries and stock from a JSON file",
		Long: "seed loads a JSON file (see examples/seed.json) into an organisation in one transaction. Records are\n" +
			"named by natural keys and may refer to records loaded earlier. Any invalid record rejects the whole\n" +
			"file, naming its section and index, and nothing is written. --file - reads standard input.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			var data []byte
			if file == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(file)
			}
			if err != nil {
				return fmt.Errorf("read seed file: %w", err)
			}
			f, err := domain.ParseSeed(data)
			if err != nil {
				return err
			}
			seed := func(ctx context.Context, d *db.DB) (db.SeedResult, error) { return d.Seed(ctx, orgID, f) }
			return printFromDB(cmd, cfg, seed, printSeedResult)
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().StringVar(&file, "file", "", "seed file, or - for standard input (required)")
	_ = cmd.MarkFlagRequired("org")
	_ = cmd.MarkFlagRequired("file")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

func printSeedResult(w io.Writer, r db.SeedResult) {
	fmt.Fprintln(w, "RECORDS\tCREATED")
	for _, row := range []struct {
		name string
		n    int
	}{{"locations", r.Locations}, {"customers", r.Customers}, {"products", r.Products}, {"quotes", r.Quotes},
		{"orders", r.Orders}, {"suppliers", r.Suppliers}, {"purchase orders", r.PurchaseOrders},
		{"receipts", r.Receipts}, {"deliveries", r.Deliveries}, {"stock lines", r.Stock}, {"goods receipts", r.GoodsReceipts}} {
		fmt.Fprintf(w, "%s\t%d\n", row.name, row.n)
	}
}

func secretKeyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "secret-key",
		Short: "Print a new random value for COMMERCE_SECRET_KEY",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), secrets.NewServiceKey())
			return err
		},
	}
}
