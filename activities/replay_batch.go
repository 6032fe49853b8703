package activities

import (
	"context"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/logging"
)

// A chunk of a bulk replay takes at most ReplayChunkSize receipts and
// replays ReplayParallel of them at once: a batch never holds more of the
// worker than that.
const (
	ReplayChunkSize = 50
	ReplayParallel  = 4
)

// ReplayBatchChunk replays the next receipts of a bulk replay (at most
// ReplayChunkSize, ReplayParallel at once), records how
// each came out, and says whether any are left. It reports a heartbeat
// after each receipt.
func (a *Activities) ReplayBatchChunk(ctx context.Context, in domain.ReplayBatchInput) (domain.ReplayChunkResult, error) {
	var res domain.ReplayChunkResult
	items, err := a.DB.NextReplayBatchItems(ctx, in.OrgID, in.BatchID, ReplayChunkSize)
	if err != nil || len(items) == 0 {
		return res, err
	}
	work := make(chan db.ReplayBatchItem)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range ReplayParallel {
		wg.Go(func() {
			for it := range work {
				outcome, reason, err := a.Replays.ReplayBatchItem(ctx, in.OrgID, in.BatchID, it, in.DryRun, in.Mapping)
				if err == nil && outcome != "" {
					err = a.DB.FinishReplayBatchItem(ctx, in.OrgID, in.BatchID, it.ReceiptID, outcome, reason)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil && outcome != "" {
					res.Done++
				}
				mu.Unlock()
				if activity.IsActivity(ctx) {
					activity.RecordHeartbeat(ctx, it.ReceiptID.String())
				}
			}
		})
	}
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		work <- it
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		logging.Traced(ctx, a.Log).Warn("bulk replay chunk", zap.Stringer("batch_id", in.BatchID), zap.Error(firstErr))
		return res, firstErr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	left, err := a.DB.NextReplayBatchItems(ctx, in.OrgID, in.BatchID, 1)
	res.Remaining = len(left) > 0
	return res, err
}

// EndReplayBatch marks a bulk replay completed (one stopped stays stopped).
func (a *Activities) EndReplayBatch(ctx context.Context, in domain.ReplayBatchInput) error {
	return a.DB.EndReplayBatch(ctx, in.OrgID, in.BatchID, "completed")
}
