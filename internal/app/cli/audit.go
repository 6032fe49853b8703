package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/commerce-integration/commerce/db"
)

// auditListed is how many entries `audit list` prints.
const auditListed = 1000

func auditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "The audit log of management writes (replays, cancels, subscriptions, resends)"}
	list := func(d *db.DB, ctx context.Context, org uuid.UUID) ([]db.AuditEntry, error) {
		entries, err := d.ListAudit(ctx, org, db.Page{Limit: auditListed})
		return entries[:min(len(entries), auditListed)], err
	}
	cmd.AddCommand(orgListCmd("List an organisation's audit log, newest first: who (key:<id> or cli:<user>), what, on which record, when",
		list, func(w io.Writer, entries []db.AuditEntry) {
			fmt.Fprintln(w, "WHEN\tACTOR\tACTION\tTARGET")
			for _, e := range entries {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s %s\n", e.CreatedAt, e.Actor, e.Action, e.TargetType, e.TargetID)
			}
		}))
	return cmd
}
