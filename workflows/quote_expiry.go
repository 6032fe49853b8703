package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// quoteActivityOptions: expiring a quote is one short transaction; retry
// database outages with backoff for up to a day.
var quoteActivityOptions = workflow.ActivityOptions{
	StartToCloseTimeout:    30 * time.Second,
	ScheduleToCloseTimeout: 24 * time.Hour,
	RetryPolicy:            outageRetry,
}

// QuoteExpiry is the durable timer of a draft or sent quote: it sleeps
// until the end of the quote's valid_until day (UTC), then moves the quote
// to expired unless it was accepted or declined meanwhile. If valid_until
// was moved later, it sleeps again until the new date.
func QuoteExpiry(ctx workflow.Context, in domain.QuoteExpiryInput) (domain.ExpireQuoteResult, error) {
	ctx = workflow.WithActivityOptions(ctx, quoteActivityOptions)
	for {
		if wait := domain.QuoteExpiresAt(in.ValidUntil).Sub(workflow.Now(ctx)); wait > 0 {
			if err := workflow.Sleep(ctx, wait); err != nil {
				return domain.ExpireQuoteResult{}, err
			}
		}
		var res domain.ExpireQuoteResult
		err := workflow.ExecuteActivity(ctx, expireQuote, domain.ExpireQuoteInput{OrgID: in.OrgID, QuoteID: in.QuoteID}).Get(ctx, &res)
		if err != nil {
			return res, err
		}
		if res.Expired || res.ValidUntil == nil || !res.ValidUntil.After(in.ValidUntil.Time) ||
			(res.Status != domain.QuoteDraft && res.Status != domain.QuoteSent) {
			return res, nil
		}
		in.ValidUntil = *res.ValidUntil
	}
}
