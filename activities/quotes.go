package activities

import (
	"context"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
)

// ExpireQuoteInput names the quote to expire.
type ExpireQuoteInput struct {
	OrgID   uuid.UUID `json:"org_id"`
	QuoteID uuid.UUID `json:"quote_id"`
}

// ExpireQuoteResult says what expiring a quote did.
type ExpireQuoteResult = db.ExpireQuoteResult

// ExpireQuote moves a draft or sent quote whose valid_until has passed to
// expired. It is safe to repeat: a quote that moved on, or whose
// valid_until moved later, is reported as it stands.
func (a *Activities) ExpireQuote(ctx context.Context, in ExpireQuoteInput) (ExpireQuoteResult, error) {
	res, err := a.DB.ExpireQuote(ctx, in.OrgID, in.QuoteID, a.now())
	return res, businessError(err)
}
