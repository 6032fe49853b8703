package api

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// inbound serves POST /api/in/{token}: it hands the post to the intake
// (integrations.Posts.Receive), which runs its stages in the order of
// docs/design.md#the-inbound-pipeline, and writes the answer the intake
// gives.
func (s *Server) inbound(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
	// The body is read within the time its limit allows (one read deadline
	// for the request).
	_ = http.NewResponseController(w).SetReadDeadline(received.Add(bodyReadTimeout(domain.MaxInboundBody)))
	a, err := s.inbounds.Receive(r.Context(), integrations.Request{
		Token: chi.URLParam(r, "token"), Received: received, Header: r.Header, Body: r.Body,
	})
	if a.Unread {
		closeUnread(w, r)
	}
	if err != nil {
		writeErrorBody(w, s.fail(r.Context(), err))
		return
	}
	if a.ReceiptID != uuid.Nil {
		w.Header().Set("X-Receipt-Id", a.ReceiptID.String())
	}
	if a.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(a.RetryAfter.Seconds()))))
	}
	if a.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	if a.Challenge != "" {
		w.Header().Set("WWW-Authenticate", a.Challenge)
	}
	if a.Error != "" && a.Body == nil {
		writeError(w, a.Status, a.Error)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body)
}
