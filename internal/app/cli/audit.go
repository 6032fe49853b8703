package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// auditListed is how many entries `audit list` prints.
const auditListed = 1000

// auditJSON is an audit entry as `audit list --json` prints it (the REST API
// has no audit route, so no api type to print).
type auditJSON struct {
	ID         uuid.UUID         `json:"id"`
	OrgID      uuid.UUID         `json:"org_id"`
	Actor      string            `json:"actor"`
	Action     string            `json:"action"`
	TargetType string            `json:"target_type"`
	TargetID   string            `json:"target_id"`
	Detail     domain.JSONObject `json:"detail"`
	CreatedAt  domain.Timestamp  `json:"created_at"`
}

func newAuditJSON(e db.AuditEntry) auditJSON {
	return auditJSON{ID: e.ID, OrgID: e.OrgID, Actor: e.Actor, Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID,
		Detail: e.Detail, CreatedAt: e.CreatedAt}
}

func auditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "The audit log of management writes (replays, cancels, subscriptions, resends)"}
	list := func(d *db.DB, ctx context.Context, org uuid.UUID) ([]auditJSON, error) {
		entries, err := d.ListAudit(ctx, org, db.Page{Limit: auditListed})
		return api.Answers(entries[:min(len(entries), auditListed)], newAuditJSON), err
	}
	cmd.AddCommand(orgListCmd("List an organisation's audit log, newest first: who (key:<id> or cli:<user>), what, on which record, when",
		list, func(w io.Writer, entries []auditJSON) {
			fmt.Fprintln(w, "WHEN\tACTOR\tACTION\tTARGET")
			for _, e := range entries {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s %s\n", e.CreatedAt, e.Actor, e.Action, e.TargetType, e.TargetID)
			}
		}))
	return cmd
}
