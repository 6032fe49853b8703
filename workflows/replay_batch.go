package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/commerce-integration/commerce/domain"
)

// A bulk replay goes through its receipts a chunk at a time, each chunk one
// activity that replays a bounded number of receipts, a few at once (see
// activities.ReplayBatchChunk), and pauses between chunks, so that a batch
// of 10,000 never takes more than a share of the worker. After
// replayChunksPerRun chunks the workflow continues as new, so its history
// stays small.
const (
	replayChunksPerRun = 20
	replayPause        = 200 * time.Millisecond
	// replayStalledPause is the pause after a chunk that finished nothing
	// (its replays are still running): look again later.
	replayStalledPause = 10 * time.Second
)

// replayChunkOptions: a chunk reports a heartbeat after each receipt, so a
// worker that dies is noticed within the heartbeat timeout and the chunk
// runs again on another; receipts it had finished are not taken again, and
// one it had started is carried on, never replayed twice.
var replayChunkOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Minute,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy:         outageRetry,
}

// ReplayBatch carries out a bulk replay, replay-batch/<id>: chunk after
// chunk until no receipt is left or the batch was stopped, then marks it
// ended. Its progress is in Postgres, per receipt, and readable while it
// runs.
func ReplayBatch(ctx workflow.Context, in domain.ReplayBatchInput) error {
	ctx = workflow.WithActivityOptions(ctx, replayChunkOptions)
	for range replayChunksPerRun {
		var res domain.ReplayChunkResult
		if err := workflow.ExecuteActivity(ctx, replayBatchChunk, in).Get(ctx, &res); err != nil {
			return err
		}
		if !res.Remaining {
			return workflow.ExecuteActivity(ctx, endReplayBatch, in).Get(ctx, nil)
		}
		pause := replayPause
		if res.Done == 0 {
			pause = replayStalledPause
		}
		if err := workflow.Sleep(ctx, pause); err != nil {
			return err
		}
	}
	return workflow.NewContinueAsNewError(ctx, ReplayBatch, in)
}
