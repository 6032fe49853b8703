package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/outbound"
)

func webhookCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "webhook", Short: "Webhook subscriptions, and the deliveries of events to them"}
	cmd.AddCommand(webhookAddCmd(), webhookListCmd(),
		webhookActiveCmd("disable", false, "Disable a subscription: no new deliveries, and waiting retries end"),
		webhookActiveCmd("enable", true, "Enable a disabled subscription again (for events from now on)"),
		webhookSettingsCmd(), webhookDeliveriesCmd(), webhookShowCmd(), webhookResendCmd(), webhookSkipCmd(), webhookRotateCmd(), webhookRecoverCmd())
	return cmd
}

// subscriptionJSON is a subscription as `webhook add --json` prints it: the
// API's answer, with the secret.
type subscriptionJSON struct {
	api.Subscription
	Secret string `json:"secret,omitempty"`
}

func printSubscription(w io.Writer, s api.Subscription) {
	fmt.Fprintf(w, "subscription\t%s\nurl\t%s\nevents\t%s\nactive\t%v\n", s.ID, s.URL, eventsText(s.EventTypes), s.Active)
	rate := "none"
	if s.RateLimitPerSecond != nil {
		rate = fmt.Sprintf("%d/s", *s.RateLimitPerSecond)
	}
	fmt.Fprintf(w, "rate limit\t%s\nmax in flight\t%d\nordering\t%s\nstate\t%s", rate, s.MaxInFlight, s.Ordering, s.State)
	if s.FailingSince != nil {
		fmt.Fprintf(w, " since %s", s.FailingSince)
	}
	fmt.Fprintf(w, "\nbacklog\t%d pending, %d failed, %d held\n", s.Backlog.Pending, s.Backlog.Failed, s.Backlog.Held)
}

// webhookSettingsCmd changes how a subscription's deliveries go to its
// receiver; flags not given stay as they are.
func webhookSettingsCmd() *cobra.Command {
	var rate string
	var inFlight int
	var ordering string
	var cmd *cobra.Command
	set := func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (db.Subscription, error) {
		var ch db.SubscriptionChange
		if cmd.Flags().Changed("rate") {
			ch.RateLimitSet = true
			if rate != "none" {
				n, err := strconv.Atoi(rate)
				if err != nil {
					return db.Subscription{}, usagef("--rate: %q is not a whole number or none", rate)
				}
				ch.RateLimit = &n
			}
		}
		if cmd.Flags().Changed("max-in-flight") {
			ch.MaxInFlight = &inFlight
		}
		if cmd.Flags().Changed("ordering") {
			ch.Ordering = &ordering
		}
		m, err := operatorService(config.Load(), d, nil, nil)
		if err != nil {
			return db.Subscription{}, err
		}
		return m.UpdateSubscription(ctx, operator(), orgID, id, ch)
	}
	cmd = orgRecordCmd("settings SUBSCRIPTION_ID", "Set a subscription's rate limit, attempts at once and ordering (docs/webhooks.md)",
		(*db.DB).SubscriptionOrg, answering(set, api.NewSubscription), printSubscription)
	cmd.Flags().StringVar(&rate, "rate", "none", "attempts a second at most, 1 to 1000, or none")
	cmd.Flags().IntVar(&inFlight, "max-in-flight", 10, "attempts at once at most, 1 to 100")
	cmd.Flags().StringVar(&ordering, "ordering", "none", "none, or per_entity: one entity's deliveries one at a time, in event order")
	return cmd
}

func eventsText(types []string) string {
	if len(types) == 0 {
		return "all"
	}
	return strings.Join(types, ",")
}

func webhookAddCmd() *cobra.Command {
	cfg := config.Load()
	var org, url, events string
	cmd := &cobra.Command{
		Use:   "add --org ORG --url URL [--events a,b]",
		Short: "Subscribe a URL to events (the signing secret is printed once)",
		Long: "add subscribes an http(s) URL to the organisation's events: every event type, or those --events names\n" +
			"(customer.created, customer.updated, products.upserted, request.created, stock.movement.created,\n" +
			"order.status_changed, order.invoice_recorded, delivery.status_changed, purchase_order.acknowledged,\n" +
			"supplier_invoice.matched, supplier_invoice.variance_raised, inbound.receipt.failed). Each delivery is\n" +
			"signed with the subscription's secret: see docs/webhooks.md. Private, loopback and link-local addresses\n" +
			"are refused unless COMMERCE_ALLOW_PRIVATE_TARGETS is true.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			types, err := domain.ParseEventTypes(events)
			if err != nil {
				return err
			}
			targets, err := cfg.Targets()
			if err != nil {
				return err
			}
			if _, err := outbound.CheckURL(cmd.Context(), url, targets); err != nil {
				// An operator, unlike an API caller, is told why.
				return usagef("--url: %v: %s", err, outbound.Reason(err))
			}
			sealer, err := configSealer(cfg)
			if err != nil {
				return err
			}
			add := func(ctx context.Context, d *db.DB) (subscriptionJSON, error) {
				m, err := operatorService(cfg, d, sealer, nil)
				if err != nil {
					return subscriptionJSON{}, err
				}
				s, err := m.CreateSubscription(ctx, operator(), db.NewSubscription{OrgID: orgID, URL: url, EventTypes: types})
				return subscriptionJSON{Subscription: api.NewSubscription(s.Subscription), Secret: s.Secret}, err
			}
			return printFromDB(cmd, cfg, add, func(w io.Writer, s subscriptionJSON) {
				printSubscription(w, s.Subscription)
				fmt.Fprintf(w, "secret\t%s\n\nThe secret is shown once and stored sealed: keep it now; receivers verify deliveries with it.\n", s.Secret)
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().StringVar(&url, "url", "", "the receiver's http(s) URL (required)")
	cmd.Flags().StringVar(&events, "events", "all", "comma-separated event types, or all")
	_ = cmd.MarkFlagRequired("org")
	_ = cmd.MarkFlagRequired("url")
	jsonFlag(cmd)
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "COMMERCE_ALLOW_PRIVATE_TARGETS")
	return cmd
}

func webhookListCmd() *cobra.Command {
	list := func(d *db.DB, ctx context.Context, orgID uuid.UUID) ([]api.Subscription, error) {
		// An unknown organisation is an error, not an empty list.
		if _, err := d.Organisation(ctx, orgID); err != nil {
			return nil, err
		}
		list, err := db.EveryPage(func(p db.Page) ([]db.Subscription, error) { return d.ListSubscriptionsPage(ctx, orgID, p) },
			func(s db.Subscription) db.Key { return db.Key{At: s.CreatedAt.Time, ID: s.ID} })
		return api.Answers(list, api.NewSubscription), err
	}
	return orgListCmd("List an organisation's subscriptions (never their secrets)", list,
		func(w io.Writer, list []api.Subscription) {
			fmt.Fprintln(w, "ID\tURL\tEVENTS\tACTIVE\tCREATED")
			for _, s := range list {
				fmt.Fprintf(w, "%s\t%s\t%s\t%v\t%s\n", s.ID, s.URL, eventsText(s.EventTypes), s.Active, s.CreatedAt)
			}
		})
}

func webhookActiveCmd(use string, active bool, short string) *cobra.Command {
	set := func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (db.Subscription, error) {
		return d.SetSubscriptionActive(ctx, orgID, id, active)
	}
	return orgRecordCmd(use+" SUBSCRIPTION_ID", short, (*db.DB).SubscriptionOrg, answering(set, api.NewSubscription), printSubscription)
}

func printDelivery(w io.Writer, x api.WebhookDelivery) {
	fmt.Fprintf(w, "delivery\t%s\nevent\t%s (%s)\nsubscription\t%s\nurl\t%s\nstatus\t%s\nattempts\t%d\nnext attempt\t%s\n",
		x.ID, x.EventID, x.EventType, x.SubscriptionID, x.URL, x.Status, x.Attempts, tsOrDash(x.NextAttemptAt))
	if x.LastError != nil {
		fmt.Fprintf(w, "last error\t%s\n", *x.LastError)
	}
	for _, a := range x.AttemptLog {
		status := "-"
		if a.StatusCode != nil {
			status = fmt.Sprint(*a.StatusCode)
		}
		how := ""
		if a.Manual {
			how = " (resent)"
		}
		fmt.Fprintf(w, "attempt %d%s\t%s, %d ms, status %s", a.Attempt, how, a.StartedAt, a.DurationMS, status)
		if a.Error != nil {
			fmt.Fprintf(w, ", %s", *a.Error)
		}
		fmt.Fprintln(w)
		if a.Response != nil && *a.Response != "" {
			fmt.Fprintf(w, "  answer\t%s\n", oneLine(*a.Response, 200))
		}
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func webhookDeliveriesCmd() *cobra.Command {
	cfg := config.Load()
	var org, status, subscription string
	var limit int
	cmd := &cobra.Command{
		Use:   "deliveries --org ORG [--status pending|succeeded|failed|exhausted] [--subscription ID] [--limit N]",
		Short: "List an organisation's webhook deliveries, newest first",
		Long: "deliveries lists deliveries of events to subscriptions: pending (not attempted yet), succeeded, failed\n" +
			"(waiting for the nightly retry at next_attempt_at) or exhausted (5 attempts failed, or the subscription\n" +
			"was disabled). `webhook show` prints one with its attempt log.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			f := db.DeliveryListFilter{Status: domain.WebhookStatus(status)}
			if subscription != "" {
				id, err := parseID("--subscription", subscription)
				if err != nil {
					return err
				}
				f.SubscriptionID = &id
			}
			if limit < 1 || limit > 1000 {
				return usagef("--limit must be 1 to 1000")
			}
			list := func(ctx context.Context, d *db.DB) ([]api.WebhookDelivery, error) {
				if f.Status != "" && !slices.Contains(domain.WebhookStatuses, f.Status) {
					return nil, domain.Errorf(domain.EINVALID, "unknown delivery status %q (one of %s)", f.Status, domain.JoinValues(domain.WebhookStatuses))
				}
				// An unknown organisation is an error, not an empty list.
				if _, err := d.Organisation(ctx, orgID); err != nil {
					return nil, err
				}
				// The newest limit deliveries: the first page, without the
				// row past it that says another follows.
				deliveries, err := d.ListWebhookDeliveriesPage(ctx, orgID, f, db.Page{Limit: limit})
				return api.Answers(deliveries[:min(len(deliveries), limit)], api.NewWebhookDelivery), err
			}
			return printFromDB(cmd, cfg, list, func(w io.Writer, deliveries []api.WebhookDelivery) {
				fmt.Fprintln(w, "ID\tEVENT\tSTATUS\tATTEMPTS\tLAST STATUS\tNEXT ATTEMPT\tCREATED")
				for _, x := range deliveries {
					last := "-"
					if x.LastStatusCode != nil {
						last = fmt.Sprint(*x.LastStatusCode)
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", x.ID, x.EventType, x.Status, x.Attempts, last,
						tsOrDash(x.NextAttemptAt), x.CreatedAt)
				}
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().StringVar(&status, "status", "", "only deliveries with this status")
	cmd.Flags().StringVar(&subscription, "subscription", "", "only deliveries to this subscription")
	cmd.Flags().IntVar(&limit, "limit", 50, "how many")
	_ = cmd.MarkFlagRequired("org")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

func webhookShowCmd() *cobra.Command {
	return orgRecordCmd("show DELIVERY_ID", "Show a delivery and every attempt: status code, duration, error, the start of the answer",
		(*db.DB).WebhookDeliveryOrg, answering((*db.DB).GetWebhookDelivery, api.NewWebhookDelivery), printDelivery)
}

// webhookSkipCmd ends a delivery not delivered yet without another
// attempt (audited), so that its entity's later deliveries go on.
func webhookSkipCmd() *cobra.Command {
	skip := func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (db.WebhookDelivery, error) {
		m, err := operatorService(config.Load(), d, nil, nil)
		if err != nil {
			return db.WebhookDelivery{}, err
		}
		return m.Skip(ctx, operator(), orgID, id)
	}
	return orgRecordCmd("skip DELIVERY_ID", "End a pending, failed or held delivery without another attempt (its entity's later deliveries go on)",
		(*db.DB).WebhookDeliveryOrg, answering(skip, api.NewWebhookDelivery), printDelivery)
}

func webhookResendCmd() *cobra.Command {
	cfg := config.Load()
	var wait time.Duration
	var org string
	cmd := &cobra.Command{
		Use:   "resend DELIVERY_ID",
		Short: "Send a delivery again now (it counts as an attempt) and show how it went",
		Long: "resend makes an attempt of the delivery at once, with the same delivery id, through its workflow\n" +
			"webhook/<delivery_id>. A delivery waiting for its nightly retry keeps its remaining retries if this attempt\n" +
			"fails; one that had succeeded or was exhausted gets this one attempt more. It needs Temporal and a worker.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("DELIVERY_ID", args[0])
			if err != nil {
				return err
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				orgID, err := recordOrg(ctx, d, org, (*db.DB).WebhookDeliveryOrg, id)
				if err != nil {
					return err
				}
				var x db.WebhookDelivery
				err = withTemporal(ctx, cfg, func(tc client.Client, _ *zap.Logger) error {
					m, err := operatorService(cfg, d, nil, tc)
					if err != nil {
						return err
					}
					x, err = m.Resend(ctx, operator(), orgID, id)
					return err
				})
				if err != nil {
					return err
				}
				attempts := x.Attempts
				// Wait for the attempt to be logged (a request takes at most 10 s).
				deadline := time.Now().Add(wait)
				for {
					if x, err = d.GetWebhookDelivery(ctx, orgID, id); err != nil {
						return err
					}
					if len(x.AttemptLog) > 0 && x.AttemptLog[len(x.AttemptLog)-1].Attempt > attempts || time.Now().After(deadline) {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				out := api.NewWebhookDelivery(x)
				return newPrinter(cmd).print(out, func(w io.Writer) { printDelivery(w, out) })
			})
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 20*time.Second, "how long to wait for the attempt before printing the delivery")
	orgFlag(cmd, &org)
	jsonFlag(cmd)
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE")
	return cmd
}

func webhookRotateCmd() *cobra.Command {
	cfg := config.Load()
	var org string
	cmd := &cobra.Command{
		Use:   "rotate-secret SUBSCRIPTION_ID",
		Short: "Give a subscription a new secret (printed once); the old one signs beside it for 24 hours",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("SUBSCRIPTION_ID", args[0])
			if err != nil {
				return err
			}
			sealer, err := configSealer(cfg)
			if err != nil {
				return err
			}
			rotate := func(ctx context.Context, d *db.DB) (rotatedJSON, error) {
				orgID, err := recordOrg(ctx, d, org, (*db.DB).SubscriptionOrg, id)
				if err != nil {
					return rotatedJSON{}, err
				}
				m, err := operatorService(cfg, d, sealer, nil)
				if err != nil {
					return rotatedJSON{}, err
				}
				r, err := m.RotateSecret(ctx, operator(), orgID, id)
				return rotatedJSON{Subscription: api.NewSubscription(r.Subscription), Secret: r.Secret, PreviousExpiresAt: r.PreviousExpiresAt.String()}, err
			}
			return printFromDB(cmd, cfg, rotate, func(w io.Writer, r rotatedJSON) {
				printSubscription(w, r.Subscription)
				fmt.Fprintf(w, "secret\t%s\nold secret signs until\t%s\n\nThe secret is shown once: keep it now.\n", r.Secret, r.PreviousExpiresAt)
			})
		},
	}
	orgFlag(cmd, &org)
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

// rotatedJSON is `webhook rotate-secret --json`: the API's answer of the
// subscription, with its new secret.
type rotatedJSON struct {
	api.Subscription
	Secret            string `json:"secret"`
	PreviousExpiresAt string `json:"previous_secret_expires_at"`
}

func webhookRecoverCmd() *cobra.Command {
	cfg := config.Load()
	var org, since string
	cmd := &cobra.Command{
		Use:   "recover SUBSCRIPTION_ID --since TIME",
		Short: "Resend every failed or exhausted delivery of a subscription created since TIME (RFC 3339)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("SUBSCRIPTION_ID", args[0])
			if err != nil {
				return err
			}
			t, err := time.Parse(time.RFC3339Nano, since)
			if err != nil {
				return usagef("--since: not an RFC 3339 time")
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				orgID, err := recordOrg(ctx, d, org, (*db.DB).SubscriptionOrg, id)
				if err != nil {
					return err
				}
				return withTemporal(ctx, cfg, func(tc client.Client, _ *zap.Logger) error {
					m, err := operatorService(cfg, d, nil, tc)
					if err != nil {
						return err
					}
					n, err := m.Recover(ctx, operator(), orgID, id, t)
					if err != nil {
						return err
					}
					out := map[string]int{"resent": n}
					return newPrinter(cmd).print(out, func(w io.Writer) { fmt.Fprintf(w, "resent\t%d\n", n) })
				})
			})
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "RFC 3339 time: deliveries created since then (required)")
	_ = cmd.MarkFlagRequired("since")
	orgFlag(cmd, &org)
	jsonFlag(cmd)
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE")
	return cmd
}
