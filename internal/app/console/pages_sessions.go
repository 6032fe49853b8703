package console

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// The sessions page: a user's own live sessions, each with a button that
// ends it; an owner sees and ends everyone's in the organisation.

type sessionsData struct {
	Sessions []db.ConsoleSessionInfo
	// Everyone is set for an owner: the list is the organisation's.
	Everyone bool
	Current  uuid.UUID
}

func (c *console) sessionsPage(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	of := v.UserID
	if v.Role == domain.UserOwner {
		of = uuid.Nil
	}
	list, err := c.DB.ListConsoleSessions(r.Context(), v.OrgID, of)
	if err != nil {
		c.internal(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "sessions", sessionsData{Sessions: list, Everyone: of == uuid.Nil, Current: v.SessionID})
}

// endSession ends a session: the viewer's own, or, for an owner, anyone's.
// Ending the current one signs out.
func (c *console) endSession(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	id, err := pathID(r)
	if err != nil {
		c.refused(w, r, Prefix+"/sessions", err)
		return
	}
	of := v.UserID
	if v.Role == domain.UserOwner {
		of = uuid.Nil
	}
	email, err := c.DB.EndConsoleSessionByID(r.Context(), v.OrgID, of, id)
	if err != nil {
		c.refused(w, r, Prefix+"/sessions", err)
		return
	}
	if err := c.DB.RecordAudit(r.Context(), db.NewAuditEntry{OrgID: v.OrgID, Actor: string(v.actor()), Action: "console.session_end",
		TargetType: "session", TargetID: id.String(), Detail: map[string]any{"email": email}}); err != nil {
		c.internal(w, r, err)
		return
	}
	if id == v.SessionID {
		c.setCookie(w, r, sessionCookie, "", -1)
		c.render(w, r, http.StatusOK, "signin", map[string]any{"Message": "Signed out: that session was this one.", "SSO": true})
		return
	}
	c.done(w, r, Prefix+"/sessions", "Ended a session of "+email+".")
}
