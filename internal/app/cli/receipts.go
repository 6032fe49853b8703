package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/secrets"
)

func receiptsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "receipts", Short: "List, show and replay what was posted to inbound endpoints"}
	cmd.AddCommand(receiptsListCmd(), receiptsShowCmd(), receiptsReplayCmd(), receiptsCancelCmd())
	return cmd
}

// receiptJSON is one receipt as `receipts list --json` prints it; show and
// replay add "response" (the answer), the body, its trace (the API's
// answer of it) and the link to its workflow.
type receiptJSON struct {
	ID            uuid.UUID       `json:"id"`
	EndpointID    uuid.UUID       `json:"endpoint_id"`
	Action        domain.Action   `json:"action"`
	ReceivedAt    string          `json:"received_at"`
	StatusCode    *int            `json:"status_code"`
	Outcome       domain.Outcome  `json:"outcome"`
	Refs          []string        `json:"refs"`
	WaitingFor    []string        `json:"waiting_for,omitempty"`
	Waiting       *string         `json:"waiting_description,omitempty"`
	ReplayOf      *uuid.UUID      `json:"replay_of"`
	WorkflowID    *string         `json:"workflow_id"`
	Error         *string         `json:"error"`
	DurationMS    *int            `json:"duration_ms"`
	Response      json.RawMessage `json:"response,omitempty"`
	Body          json.RawMessage `json:"body,omitempty"`
	SizeBytes     int             `json:"size_bytes"`
	CompletedAt   *string         `json:"completed_at"`
	Replays       []uuid.UUID     `json:"replays,omitempty"`
	TemporalUIURL *string         `json:"temporal_ui_url,omitempty"`
	Trace         *api.Trace      `json:"trace,omitempty"`
	TraceID       *string         `json:"trace_id,omitempty"`
	// Resolution is what resolved a failed or parked post (null: nothing).
	Resolution *api.ReceiptResolution `json:"resolution"`
}

func newReceiptJSON(r integrations.ReceiptSummary) receiptJSON {
	j := receiptJSON{ID: r.ID, EndpointID: r.EndpointID, Action: r.Action, ReceivedAt: r.ReceivedAt.String(), StatusCode: r.StatusCode,
		Outcome: r.Outcome, Refs: r.Refs, WaitingFor: r.WaitingFor, Waiting: r.WaitingDescription, ReplayOf: r.ReplayOf, WorkflowID: r.WorkflowID, Error: r.Error,
		DurationMS: r.DurationMS, SizeBytes: r.SizeBytes, TraceID: r.TraceID, Resolution: api.NewReceiptResolution(r.Resolution)}
	if r.CompletedAt != nil {
		s := r.CompletedAt.String()
		j.CompletedAt = &s
	}
	return j
}

// detailJSON is a receipt as `receipts show|replay|cancel` print it.
func detailJSON(r integrations.ReceiptDetail) receiptJSON {
	j := newReceiptJSON(r.ReceiptSummary)
	if r.Response != nil {
		j.Response, _ = json.Marshal(r.Response)
	}
	if r.Body != nil {
		j.Body, _ = json.Marshal(r.Body)
	}
	trace := api.NewTrace(r.Trace)
	j.Replays, j.TemporalUIURL, j.Trace = r.Replays, r.TemporalUIURL, &trace
	return j
}

func printReceipt(w io.Writer, r receiptJSON) {
	status := "-"
	if r.StatusCode != nil {
		status = fmt.Sprint(*r.StatusCode)
	}
	fmt.Fprintf(w, "receipt\t%s\nendpoint\t%s\naction\t%s\nreceived\t%s\nanswered\t%s\noutcome\t%s\n",
		r.ID, r.EndpointID, r.Action, r.ReceivedAt, status, r.Outcome)
	if len(r.Refs) > 0 {
		fmt.Fprintf(w, "refs\t%s\n", strings.Join(r.Refs, ", "))
	}
	if r.Waiting != nil {
		fmt.Fprintf(w, "waiting for\t%s\n", *r.Waiting)
	}
	if r.ReplayOf != nil {
		fmt.Fprintf(w, "replay of\t%s\n", *r.ReplayOf)
	}
	if r.Error != nil {
		fmt.Fprintf(w, "error\t%s\n", *r.Error)
	}
	if r.Resolution != nil {
		fmt.Fprintf(w, "resolved\t%s %s\n", resolvedText(r.Resolution), r.Resolution.At)
	}
	if r.WorkflowID != nil {
		fmt.Fprintf(w, "workflow\t%s\n", *r.WorkflowID)
	}
	if r.TemporalUIURL != nil {
		fmt.Fprintf(w, "temporal ui\t%s\n", *r.TemporalUIURL)
	}
	if r.TraceID != nil {
		fmt.Fprintf(w, "trace id\t%s\n", *r.TraceID)
	}
	if len(r.Response) > 0 {
		fmt.Fprintf(w, "response\t%s\n", r.Response)
	}
	if r.Trace != nil {
		for _, c := range r.Trace.Changes {
			fmt.Fprintf(w, "change\t%s %s %s: %v -> %v\n", c.Entity, cmp.Or(c.Ref, c.ID), c.Field, c.From, c.To)
		}
		for _, e := range r.Trace.Events {
			fmt.Fprintf(w, "event\t%s %s\n", e.Type, e.ID)
			for _, x := range e.Deliveries {
				fmt.Fprintf(w, "  delivery\t%s %s (%d attempts)\n", x.ID, x.Status, x.Attempts)
			}
		}
	}
	for _, id := range r.Replays {
		fmt.Fprintf(w, "replay\t%s\n", id)
	}
}

func receiptsListCmd() *cobra.Command {
	cfg := config.Load()
	var endpoint, outcome, ref, resolved string
	var limit int
	cmd := &cobra.Command{
		Use:   "list --endpoint ENDPOINT_ID [--status failed|parked|...] [--ref REFERENCE] [--limit N]",
		Short: "List an endpoint's recent receipts, newest first",
		Long: "list shows an endpoint's receipts, newest first. --status takes one outcome or several, comma-separated:\n" +
			"pending, applied, unchanged, parked, unmatched, cancelled, failed (refused with a 4xx) or error (a fault\n" +
			"on the service side, 5xx). --status failed,error,unmatched,cancelled lists every post that did not go through.\n" +
			"--ref finds a receipt by its id, or the receipts whose body names a reference (an order, quote, invoice,\n" +
			"purchase order, supplier, delivery or consignment reference, a customer's external id): whole, or its\n" +
			"first 3 characters or more, in any case. --resolved true|false|any filters by resolution (a replay that\n" +
			"applied, or a cancellation): a list of failures only (--status of failed, error, unmatched, parked) leaves\n" +
			"resolved receipts out unless --resolved true or any; other lists show both.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := parseID("--endpoint", endpoint)
			if err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return usagef("--limit must be 1 to 1000")
			}
			outcomes, err := domain.ParseOutcomes(outcome)
			if err != nil {
				return usagef("--status: %s", domain.ErrorMessage(err))
			}
			var def *bool
			if db.FailureOutcomes(outcomes) {
				def = db.Unresolved()
			}
			resolvedFilter, err := db.ParseResolved(strings.TrimSpace(resolved), def)
			if err != nil {
				return usagef("--resolved: %s", domain.ErrorMessage(err))
			}
			list := func(ctx context.Context, d *db.DB) ([]receiptJSON, error) {
				orgID, err := d.EndpointOrg(ctx, id)
				if err != nil {
					return nil, err
				}
				m, err := operatorService(cfg, d, nil, nil)
				if err != nil {
					return nil, err
				}
				receipts, err := m.ListReceipts(ctx, orgID,
					db.OrgReceiptFilter{EndpointID: &id, Outcomes: outcomes, Ref: strings.TrimSpace(ref), Resolved: resolvedFilter}, db.Page{Limit: limit})
				receipts = receipts[:min(len(receipts), limit)]
				out := make([]receiptJSON, len(receipts))
				for i, r := range receipts {
					out[i] = newReceiptJSON(r)
				}
				return out, err
			}
			return printFromDB(cmd, cfg, list, func(w io.Writer, out []receiptJSON) {
				fmt.Fprintln(w, "ID\tRECEIVED\tSTATUS\tOUTCOME\tREFS\tREPLAY OF\tRESOLVED\tERROR")
				for _, r := range out {
					status, replay, errText, resolvedBy := "-", "-", "-", "-"
					if r.Resolution != nil {
						resolvedBy = resolvedText(r.Resolution)
					}
					if r.StatusCode != nil {
						status = fmt.Sprint(*r.StatusCode)
					}
					if r.ReplayOf != nil {
						replay = r.ReplayOf.String()
					}
					if r.Error != nil {
						errText = *r.Error
					}
					refs := "-"
					if len(r.Refs) > 0 {
						refs = strings.Join(r.Refs, ",")
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.ReceivedAt, status, r.Outcome, refs, replay, resolvedBy, errText)
				}
			})
		},
	}
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "endpoint id (required)")
	cmd.Flags().StringVar(&outcome, "status", "", "only receipts with these outcomes (comma-separated)")
	cmd.Flags().StringVar(&ref, "ref", "", "only the receipt with this id, or those naming this reference (whole or its first 3+ characters, any case)")
	cmd.Flags().StringVar(&resolved, "resolved", "", "true, false or any: by resolution (default false for a list of failures, any otherwise)")
	cmd.Flags().IntVar(&limit, "limit", 50, "how many")
	_ = cmd.MarkFlagRequired("endpoint")
	jsonFlag(cmd)
	dbFlags(cmd, &cfg)
	return cmd
}

func receiptsShowCmd() *cobra.Command {
	cfg := config.Load()
	show := func(d *db.DB, ctx context.Context, id uuid.UUID) (receiptJSON, error) {
		orgID, err := d.ReceiptOrg(ctx, id)
		if err != nil {
			return receiptJSON{}, err
		}
		m, err := operatorService(cfg, d, nil, nil)
		if err != nil {
			return receiptJSON{}, err
		}
		r, err := m.Receipt(ctx, orgID, id)
		return detailJSON(r), err
	}
	return recordCmd("show RECEIPT_ID", "Show a receipt: what was posted, what it answered, where it stands", show, printReceipt)
}

func receiptsReplayCmd() *cobra.Command {
	cfg := config.Load()
	var dryRun bool
	var mappingVersion string
	cmd := &cobra.Command{
		Use:   "replay RECEIPT_ID",
		Short: "Run a receipt's action again on its stored body (a new receipt, pointing at the original)",
		Long: "replay stores a new receipt that points at the original and runs the endpoint's action on the stored body,\n" +
			"through the same workflow as a live post. Its effects are keyed by the original receipt: replaying a post that\n" +
			"was applied changes nothing and answers its original result; replaying one that failed (say, before the order\n" +
			"it names was loaded) carries it out now. Refused, with the reason: a post refused for its signature (401) or\n" +
			"size (413), one stored while its endpoint was paused, a deleted or paused endpoint (resume it first), a post\n" +
			"with a replay still running or parked, and a signed endpoint's post whose stored signature does not verify\n" +
			"at the time it was received (which needs COMMERCE_SECRET_KEY). --dry-run shows the changes it would make and\n" +
			"writes nothing (no receipt, no event, no workflow). The stored body is mapped again with the endpoint's\n" +
			"current mapping, or the one --mapping-version names (a number, or original).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("RECEIPT_ID", args[0])
			if err != nil {
				return err
			}
			choice, err := domain.ParseMappingChoice(mappingVersion)
			if err != nil {
				return err
			}
			// Only a signed endpoint's receipt needs the key (to verify it
			// again); the others replay without it.
			var sealer *secrets.Sealer
			if cfg.SecretKey != "" {
				if sealer, err = configSealer(cfg); err != nil {
					return err
				}
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				orgID, err := d.ReceiptOrg(ctx, id)
				if err != nil {
					return err
				}
				m, err := operatorService(cfg, d, sealer, nil)
				if err != nil {
					return err
				}
				print := func(res integrations.ReplayResult) error {
					if res.Receipt != nil {
						out := detailJSON(*res.Receipt)
						return newPrinter(cmd).print(out, func(w io.Writer) { printReceipt(w, out) })
					}
					// A dry run prints the API's answer of it.
					return newPrinter(cmd).print(api.NewReplayResult(res), func(w io.Writer) {
						fmt.Fprintf(w, "dry run\t%s would be %s\n", id, res.Outcome)
						if res.Error != nil {
							fmt.Fprintf(w, "error\t%s\n", *res.Error)
						}
						for _, c := range res.Changes {
							fmt.Fprintf(w, "change\t%s %s %s: %v -> %v\n", c.Entity, cmp.Or(c.Ref, c.ID), c.Field, c.From, c.To)
						}
					})
				}
				if dryRun {
					res, err := m.ReplayReceipt(ctx, operator(), orgID, id, true, choice)
					if err != nil {
						return err
					}
					return print(res)
				}
				// A refused replay is told before Temporal is reached.
				if err := m.CheckReplay(ctx, orgID, id); err != nil {
					return err
				}
				return withTemporal(ctx, cfg, func(tc client.Client, log *zap.Logger) error {
					m, _, err := newService(cfg, log, d, tc, sealer)
					if err != nil {
						return err
					}
					res, err := m.ReplayReceipt(ctx, operator(), orgID, id, false, choice)
					if err != nil {
						return err
					}
					return print(res)
				})
			})
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "show the changes a replay would make, and write nothing")
	cmd.Flags().StringVar(&mappingVersion, "mapping-version", "current", "the mapping the stored body is mapped with again: current, original, or a version number")
	jsonFlag(cmd)
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "COMMERCE_BASE_URL")
	return cmd
}

func receiptsCancelCmd() *cobra.Command {
	cfg := config.Load()
	cmd := &cobra.Command{
		Use:   "cancel RECEIPT_ID",
		Short: "Stop a parked receipt waiting for its record (it ends cancelled, and can be replayed later)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID("RECEIPT_ID", args[0])
			if err != nil {
				return err
			}
			return withDB(cmd, cfg, func(ctx context.Context, d *db.DB) error {
				orgID, err := d.ReceiptOrg(ctx, id)
				if err != nil {
					return err
				}
				r, err := d.GetReceipt(ctx, orgID, id)
				if err != nil {
					return err
				}
				// Refused before Temporal is reached.
				if r.Outcome != domain.OutcomeParked {
					return domain.Errorf(domain.ECONFLICT, "receipt %s is %s, not parked", id, r.Outcome)
				}
				return withTemporal(ctx, cfg, func(tc client.Client, _ *zap.Logger) error {
					m, err := operatorService(cfg, d, nil, tc)
					if err != nil {
						return err
					}
					d, err := m.CancelReceipt(ctx, operator(), orgID, id)
					if err != nil {
						return err
					}
					out := detailJSON(d)
					return newPrinter(cmd).print(out, func(w io.Writer) { printReceipt(w, out) })
				})
			})
		},
	}
	jsonFlag(cmd)
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE")
	return cmd
}

// resolvedText says what resolved a receipt: "replay <id>" or "cancel".
func resolvedText(r *api.ReceiptResolution) string {
	if r.ReceiptID != nil {
		return r.By + " " + r.ReceiptID.String()
	}
	return r.By
}
