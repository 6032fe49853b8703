package activities

import (
	"context"

	"github.com/commerce-integration/commerce/domain"
)

// ExpireQuote moves a draft or sent quote whose valid_until has passed to
// expired. It is safe to repeat: a quote that moved on, or whose
// valid_until moved later, is reported as it stands.
func (a *Activities) ExpireQuote(ctx context.Context, in domain.ExpireQuoteInput) (domain.ExpireQuoteResult, error) {
	res, err := a.DB.ExpireQuote(ctx, in.OrgID, in.QuoteID, a.now())
	return res, businessError(err)
}
