package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/secrets"
)

func endpointCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "endpoint", Short: "Create, pause, resume, delete and list inbound endpoints, set how they verify their senders and their mappings"}
	cmd.AddCommand(endpointCreateCmd(), endpointListCmd(), endpointVerificationCmd(),
		endpointStateCmd("pause", domain.EndpointPaused, "Pause an endpoint: later posts answer 409"),
		endpointStateCmd("resume", domain.EndpointActive, "Resume a paused endpoint"),
		endpointStateCmd("delete", domain.EndpointDeleted, "Delete an endpoint: its token is destroyed and later posts answer 404"),
		endpointMappingCmd())
	return cmd
}

// endpointJSON is `endpoint create --json`: the URL and secret are shown once.
type endpointJSON struct {
	ID               uuid.UUID     `json:"id"`
	Name             string        `json:"name"`
	Action           domain.Action `json:"action"`
	URL              string        `json:"url,omitempty"`
	Secret           *string       `json:"secret"`
	RequireSignature bool          `json:"require_signature"`
	// Verification is how the endpoint verifies its sender, as the API
	// shows it (never its secret).
	Verification api.EndpointVerification `json:"verification"`
	Active       bool                     `json:"active"`
	State        string                   `json:"state"`
	RateLimited  int64                    `json:"rate_limited_count"`
	CreatedAt    string                   `json:"created_at"`
}

func newEndpointJSON(e db.Endpoint) endpointJSON {
	return endpointJSON{ID: e.ID, Name: e.Name, Action: e.Action, RequireSignature: e.RequireSignature && e.Verification == domain.VerifyService,
		Verification: api.NewEndpointVerification(e.Verification, e.VerificationConfig), Active: e.State == domain.EndpointActive, State: string(e.State), RateLimited: e.RateLimitedCount, CreatedAt: e.CreatedAt.String()}
}

// InboundURL is the URL of an endpoint's token.
func InboundURL(baseURL, token string) string {
	return strings.TrimSuffix(baseURL, "/") + "/api/in/" + token
}

func endpointCreateCmd() *cobra.Command {
	cfg := config.Load()
	var org, as, name, action string
	var signed bool
	cmd := &cobra.Command{
		Use:   "create --org ORG --as ADMIN_EMAIL --name NAME --action ACTION [--require-signature]",
		Short: "Create an inbound endpoint (its URL and secret are printed once)",
		Long: "create makes an inbound endpoint that performs one action, one of:\n" + domain.ActionList() + ".\n" +
			"--as names the person creating it, who must be an owner or admin. The URL carries the token: treat it as a\n" +
			"password. With --require-signature, posts must carry X-Service-Signature made with the secret.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			orgID, err := parseID("--org", org)
			if err != nil {
				return err
			}
			var sealer *secrets.Sealer
			if signed {
				if sealer, err = configSealer(cfg); err != nil {
					return err
				}
			}
			create := func(ctx context.Context, d *db.DB) (endpointJSON, error) {
				e, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: orgID, AsEmail: as, Name: name,
					Action: domain.Action(action), RequireSignature: signed})
				out := newEndpointJSON(e.Endpoint)
				out.URL, out.Secret = InboundURL(cfg.BaseURL, e.Token), e.Secret
				return out, err
			}
			return printFromDB(cmd, cfg, create, func(w io.Writer, e endpointJSON) {
				fmt.Fprintf(w, "endpoint\t%s (%s)\nid\t%s\nurl\t%s\n", e.Name, e.Action, e.ID, e.URL)
				if e.Secret != nil {
					fmt.Fprintf(w, "secret\t%s\n", *e.Secret)
				}
				fmt.Fprintln(w, "\nThe URL (and secret) are shown once and only their hash (sealed secret) is stored: keep them now.")
			})
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "organisation id (required)")
	cmd.Flags().StringVar(&as, "as", "", "email of the owner or admin creating it (required)")
	cmd.Flags().StringVar(&name, "name", "", "endpoint name (required)")
	cmd.Flags().StringVar(&action, "action", "", "the action its posts perform (required)")
	cmd.Flags().BoolVar(&signed, "require-signature", false, "require X-Service-Signature on every post")
	for _, f := range []string{"org", "as", "name", "action"} {
		_ = cmd.MarkFlagRequired(f)
	}
	jsonFlag(cmd)
	cfg.Flags(cmd.Flags(), "DATABASE_URL", "COMMERCE_BASE_URL")
	return cmd
}

func endpointStateCmd(use string, to domain.EndpointState, short string) *cobra.Command {
	set := func(d *db.DB, ctx context.Context, orgID, id uuid.UUID) (endpointJSON, error) {
		e, err := d.SetEndpointState(ctx, orgID, id, to)
		return newEndpointJSON(e), err
	}
	return orgRecordCmd(use+" ENDPOINT_ID", short, (*db.DB).EndpointOrg, set, func(w io.Writer, e endpointJSON) {
		fmt.Fprintf(w, "endpoint\t%s (%s)\nstate\t%s\n", e.Name, e.ID, e.State)
	})
}

func endpointListCmd() *cobra.Command {
	list := func(d *db.DB, ctx context.Context, org uuid.UUID) ([]endpointJSON, error) {
		endpoints, err := d.ListEndpoints(ctx, org)
		out := make([]endpointJSON, len(endpoints))
		for i, e := range endpoints {
			out[i] = newEndpointJSON(e)
		}
		return out, err
	}
	return orgListCmd("List an organisation's inbound endpoints (never their tokens or secrets)", list,
		func(w io.Writer, out []endpointJSON) {
			fmt.Fprintln(w, "ID\tNAME\tACTION\tSTATE\tSIGNED\tVERIFICATION\tRATE LIMITED\tCREATED")
			for _, e := range out {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%v\t%s\t%d\t%s\n", e.ID, e.Name, e.Action, e.State, e.RequireSignature, e.Verification.Kind,
					e.RateLimited, e.CreatedAt)
			}
		})
}
