// Package activities holds the Temporal activities: the only code that
// workflows run with side effects. Each is idempotent, persists through db,
// and reports business rejections as non-retryable errors carrying their
// domain kind, so workflows and the HTTP layer can map them to statuses.
package activities

import (
	"net/http"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/script"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/workflows"
)

// Activities holds the dependencies every activity uses. One value is
// registered with the worker.
type Activities struct {
	DB  *db.DB
	Log *zap.Logger
	// BaseURL is the public {base_url}, for the URLs answers carry.
	BaseURL string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sealer opens webhook signing secrets.
	Sealer *secrets.Sealer
	// Webhooks sends webhook deliveries (outbound.Client).
	Webhooks *http.Client
	// Delivery is the webhook delivery policy of runs whose input carries
	// none (started before policies were handed to the workflow).
	Delivery domain.DeliveryPolicy
	// Replays replays the receipts of bulk replays, at most once per batch
	// each, with the same code as a single replay.
	Replays *integrations.Posts
	// Scripts runs subscriptions' transformations: the process's one
	// runner; nil: one of the default limits, made at first use.
	Scripts *script.Runner
	// programs keeps the transformations compiled.
	programs programs
}

// The worker registers an *Activities as the workflows' activities.
var _ workflows.Activities = (*Activities)(nil)

func (a *Activities) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// businessError turns a domain rejection into a non-retryable application
// error whose type is the domain kind; anything else (a database outage)
// stays retryable.
func businessError(err error) error {
	if err == nil {
		return nil
	}
	code := domain.ErrorCode(err)
	if code == domain.EINTERNAL {
		return err
	}
	return temporal.NewNonRetryableApplicationError(domain.ErrorMessage(err), string(code), nil)
}

// logCause logs what lies under a rejection that carries a cause (a value
// the storage refused): the sender, the receipt and the event get only the
// rejection's generic message, so the detail is kept here.
func (a *Activities) logCause(err error, fields ...zap.Field) {
	if cause := domain.ErrorCause(err); cause != nil && a.Log != nil {
		a.Log.Warn("rejected by the storage", append(fields, zap.String("reason", domain.ErrorMessage(err)), zap.Error(cause))...)
	}
}
