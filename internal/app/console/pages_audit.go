package console

import (
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

type auditData struct {
	Entries []auditRow
	Next    string
}

// auditRow is an audit entry as a person reads it: who by name (an API
// key's name; a console user's email; the operator at the command line),
// and the record by what it is, linked to its page, where its id is.
type auditRow struct {
	db.AuditEntry
	Who    string
	Record string
	Href   string
}

// auditPage is the audit log, newest first.
var auditPage = listPage[struct{}, db.AuditEntry]{
	template: "audit",
	rows: func(c *console, r *http.Request, org uuid.UUID, _ struct{}, p db.Page) ([]db.AuditEntry, error) {
		return c.DB.ListAudit(r.Context(), org, p)
	},
	key: func(x db.AuditEntry) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID },
	data: func(c *console, r *http.Request, org uuid.UUID, _ struct{}, rows []db.AuditEntry, next string) (any, error) {
		names, err := c.DB.AuditNames(r.Context(), org, rows)
		if err != nil {
			return nil, err
		}
		out := make([]auditRow, len(rows))
		for i, e := range rows {
			out[i] = auditRowOf(e, names)
		}
		return auditData{Entries: out, Next: next}, nil
	},
}

// auditRowOf names e's actor and record from names (db.AuditNames); a
// record that is gone reads as its type and id.
func auditRowOf(e db.AuditEntry, names map[string]db.RecordName) auditRow {
	row := auditRow{AuditEntry: e, Who: e.Actor}
	switch kind, rest, _ := strings.Cut(e.Actor, ":"); kind {
	case "key":
		if n, ok := names["key:"+rest]; ok {
			row.Who = "API key " + n.Name
		}
	case "console", "sso":
		row.Who = rest
	case "cli":
		row.Who = rest + " (command line)"
	}
	n, known := names[e.TargetType+":"+e.TargetID]
	switch e.TargetType {
	case "receipt":
		row.Record, row.Href = n.Name, "/console/receipts/"+e.TargetID
	case "delivery":
		row.Record, row.Href = n.Name+" to "+target(n.URL), "/console/deliveries/"+e.TargetID
	case "replay_batch":
		row.Record, row.Href = n.Name, "/console/replays/"+e.TargetID
	case "endpoint":
		row.Record, row.Href = "endpoint "+n.Name, "/console/endpoints/"+e.TargetID+"/mapping"
	case "subscription":
		row.Record, row.Href = "subscription to "+target(n.URL), "/console/deliveries?subscription="+e.TargetID
	case "user":
		row.Record = n.Name
	default:
		known = false
	}
	if !known {
		row.Record, row.Href = strings.ReplaceAll(e.TargetType, "_", " ")+" "+e.TargetID, ""
	}
	return row
}
