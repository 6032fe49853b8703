package devtemporal

import (
	"testing"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
	tlog "go.temporal.io/server/common/log"
	historyconfigs "go.temporal.io/server/service/history/configs"
)

// historyConfig is what the history service reads of the embedded server's
// dynamic config, through the server's own configuration code.
func historyConfig(limits CacheLimits) *historyconfigs.Config {
	dc := dynamicconfig.NewCollection(dynamicConfig(limits), tlog.NewNoopLogger())
	return historyconfigs.NewConfig(dc, 1)
}

func TestEmbeddedServerBoundsItsHistoryCaches(t *testing.T) {
	c := historyConfig(DevCacheLimits)
	// Counted by entries, at most 2,000 workflows, for at most 10 minutes,
	// the expired ones swept in the background.
	if c.HistoryCacheLimitSizeBased {
		t.Error("the history cache is limited by size, not by its entries")
	}
	if got := c.HistoryHostLevelCacheMaxSize(); got != 2000 {
		t.Errorf("host-level history cache keeps %d workflows, want 2000 (the server's default is 128000)", got)
	}
	if got := c.HistoryCacheTTL(); got != 10*time.Minute {
		t.Errorf("history cache TTL %v, want 10m (the server's default is 1h)", got)
	}
	if ev := c.HistoryCacheBackgroundEvict(); !ev.Enabled || ev.LoopInterval <= 0 || ev.MaxEntryPerCall <= 0 {
		t.Errorf("history cache background eviction %+v, want enabled", ev)
	}
	// The events cache: per shard, 4 MB.
	if c.EnableHostLevelEventsCache() {
		t.Error("the events cache is host-level")
	}
	if got := c.EventsShardLevelCacheMaxSizeBytes(); got != 4<<20 {
		t.Errorf("events cache %d bytes, want %d", got, 4<<20)
	}
	// The single-process switches stay.
	if got := dynamicconfig.MatchingNumTaskqueueReadPartitions.Get(dynamicconfig.NewCollection(dynamicConfig(DevCacheLimits), tlog.NewNoopLogger()))("default", "commerce", 1); got != 1 {
		t.Errorf("task queue read partitions %d, want 1", got)
	}
}

func TestCacheLimitsAreTheServersOwn(t *testing.T) {
	// Limits of another process (a larger server) reach its config as given.
	c := historyConfig(CacheLimits{HistoryEntries: 8000, HistoryTTL: 30 * time.Minute, EventsBytes: 1 << 20})
	if c.HistoryHostLevelCacheMaxSize() != 8000 || c.HistoryCacheTTL() != 30*time.Minute || c.EventsShardLevelCacheMaxSizeBytes() != 1<<20 {
		t.Errorf("limits not applied: %d entries, TTL %v, events %d bytes",
			c.HistoryHostLevelCacheMaxSize(), c.HistoryCacheTTL(), c.EventsShardLevelCacheMaxSizeBytes())
	}
}
