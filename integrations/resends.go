package integrations

import (
	"context"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
)

// StartBulkResend resends every failed or exhausted delivery of the
// organisation the filters select (at most db.MaxResendBatch), oldest
// first, each as a single resend does, and returns the batch with its
// report. A delivery no longer failed or exhausted when its turn comes is
// not resent, and the report says so; so does one whose attempt could not
// be started. A delivery it resends that is then delivered reads resolved
// by the bulk resend.
func (m *Service) StartBulkResend(ctx context.Context, actor Actor, in db.NewResendBatch) (db.ResendBatch, error) {
	if err := in.Validate(); err != nil {
		return db.ResendBatch{}, err
	}
	if in.SubscriptionID != nil {
		if _, err := m.DB.GetSubscription(ctx, in.OrgID, *in.SubscriptionID); err != nil {
			return db.ResendBatch{}, domain.Errorf(domain.EINVALID, "subscription_id names no subscription of the organisation")
		}
	}
	if _, err := m.workflows(); err != nil {
		return db.ResendBatch{}, err
	}
	in.CreatedBy = string(actor)
	id, total, err := m.DB.CreateResendBatch(ctx, in)
	if err != nil {
		return db.ResendBatch{}, err
	}
	positions, deliveries, err := m.DB.ResendBatchDeliveries(ctx, in.OrgID, id)
	if err != nil {
		return db.ResendBatch{}, err
	}
	// The resends go on if the request that started them goes away: the
	// report is what the batch did.
	run := context.WithoutCancel(ctx)
	resent := 0
	for i, x := range deliveries {
		var why *string
		if x.Status != domain.WebhookFailed && x.Status != domain.WebhookExhausted {
			s := "not resent: it is " + string(x.Status) + " now"
			why = &s
		} else if err := m.resend(run, x, db.ResentByBulk, &id); err != nil {
			logging.From(ctx, m.Log).Warn("bulk resend: starting an attempt", zap.Stringer("delivery_id", x.ID), zap.Error(err))
			s := "not resent: its attempt could not be started"
			why = &s
		} else {
			resent++
		}
		if err := m.DB.FinishResendItem(run, in.OrgID, id, positions[i], why); err != nil {
			return db.ResendBatch{}, err
		}
	}
	if err := m.DB.EndResendBatch(run, in.OrgID, id); err != nil {
		return db.ResendBatch{}, err
	}
	m.audit(run, actor, in.OrgID, "resend_batch.start", "resend_batch", id, map[string]any{"total": total, "resent": resent})
	return m.DB.GetResendBatch(run, in.OrgID, id)
}
