package db

import "context"

// MigrateTo brings the database at url to the schema version target, as
// an older release left it.
func MigrateTo(ctx context.Context, url string, target int32) (MigrateResult, error) {
	return migrateTo(ctx, url, target)
}
