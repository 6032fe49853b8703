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

func (c *console) audit(w http.ResponseWriter, r *http.Request) {
	p, err := pageKey(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	list, err := c.DB.ListAudit(r.Context(), v.OrgID, p)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	var d auditData
	d.Entries, d.Next = nextPage(r, list, func(x db.AuditEntry) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID })
	c.render(w, r, http.StatusOK, "audit", d)
}
