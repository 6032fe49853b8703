package console

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

type auditData struct {
	Entries []db.AuditEntry
	Next    string
}

// auditPage is the audit log, newest first.
var auditPage = listPage[struct{}, db.AuditEntry]{
	template: "audit",
	rows: func(c *console, r *http.Request, org uuid.UUID, _ struct{}, p db.Page) ([]db.AuditEntry, error) {
		return c.DB.ListAudit(r.Context(), org, p)
	},
	key: func(x db.AuditEntry) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID },
	data: func(_ *console, _ *http.Request, _ uuid.UUID, _ struct{}, rows []db.AuditEntry, next string) (any, error) {
		return auditData{Entries: rows, Next: next}, nil
	},
}
