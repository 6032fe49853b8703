package workflows

import (
	"testing"
	"time"
)

// No activity retries for ever: each one's retries end within a bound, after
// which its workflow sees the failure.
func TestEveryActivityHasAnOverallBound(t *testing.T) {
	for name, bound := range map[string]time.Duration{
		"apply (inbound, match)": applyOptions.ScheduleToCloseTimeout,
		"local (inbound)":        localOptions.ScheduleToCloseTimeout,
		"quote expiry":           quoteActivityOptions.ScheduleToCloseTimeout,
		"webhook delivery":       deliverOptions.ScheduleToCloseTimeout,
	} {
		if bound <= 0 {
			t.Errorf("%s: no ScheduleToCloseTimeout", name)
		}
	}
}
