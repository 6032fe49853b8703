// Package activities holds the Temporal activities: the only code that
// workflows run with side effects. Each is idempotent, persists through db,
// and reports business rejections as non-retryable errors carrying their
// domain kind, so workflows and the HTTP layer can map them to statuses.
package activities

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
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
}

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
