package devtemporal

import (
	"time"

	"go.temporal.io/server/common/dynamicconfig"
)

// CacheLimits bound the caches of a Temporal server's history service,
// which otherwise grow with the workflows it has served.
//
// The host-level workflow cache keeps each workflow's mutable state
// (execution info, pending activities and timers, the registry of its
// updates) after its last task, by default for up to an hour and 128,000
// workflows. Every inbound post runs a workflow through update-with-start,
// so at a steady 18 posts a second the server kept every one of the last
// hour's workflows, some 40 KB each: the process grew for the whole hour.
// Bounded by count, the cache keeps the most recently used workflows,
// which are the ones whose next task comes soon; a workflow evicted is
// read from persistence when it has work again.
type CacheLimits struct {
	// HistoryEntries is the most workflows the host-level cache keeps.
	HistoryEntries int
	// HistoryTTL is how long an unused workflow stays in it; expired
	// entries are also swept in the background, so an idle server gives
	// its memory back.
	HistoryTTL time.Duration
	// EventsBytes bounds each history shard's events cache.
	EventsBytes int
}

// DevCacheLimits are the embedded server's (commerce dev and the tests):
// one history shard (four on Postgres), in a process that also serves the
// API and runs the worker. 2,000 workflows is over a minute and a half of
// posts at 18 a second, and some 80 MB at the most.
var DevCacheLimits = CacheLimits{HistoryEntries: 2000, HistoryTTL: 10 * time.Minute, EventsBytes: 4 << 20}

// ServerCacheLimits are those of a Temporal server in a process of its own
// (docker-compose.yml's dynamic config, which bench/prodshape runs too):
// 8,000 workflows, some 350 MB at the most, for half an hour.
var ServerCacheLimits = CacheLimits{HistoryEntries: 8000, HistoryTTL: 30 * time.Minute, EventsBytes: 4 << 20}

// Settings are the dynamic config values that impose the limits, by key.
func (l CacheLimits) Settings() map[string]any {
	return map[string]any{
		dynamicconfig.HistoryCacheSizeBasedLimit.Key().String():       false,
		dynamicconfig.HistoryCacheHostLevelMaxSize.Key().String():     l.HistoryEntries,
		dynamicconfig.HistoryCacheTTL.Key().String():                  l.HistoryTTL.String(),
		dynamicconfig.HistoryCacheBackgroundEvict.Key().String():      map[string]any{"Enabled": true},
		dynamicconfig.EnableHostLevelEventsCache.Key().String():       false,
		dynamicconfig.EventsCacheMaxSizeBytes.Key().String():          l.EventsBytes,
		dynamicconfig.EventsHostLevelCacheMaxSizeBytes.Key().String(): l.EventsBytes,
	}
}

// dynamicConfig is the embedded server's dynamic config: the cache limits
// and the switches of a single-process server.
func dynamicConfig(limits CacheLimits) dynamicconfig.StaticClient {
	dc := dynamicconfig.StaticClient{
		// One server: one partition per task queue, so a task never waits
		// in a partition that no poller is polling to be forwarded.
		dynamicconfig.MatchingNumTaskqueueReadPartitions.Key():  []dynamicconfig.ConstrainedValue{{Value: 1}},
		dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(): []dynamicconfig.ConstrainedValue{{Value: 1}},
		// One history shard: at the default 20 reads a second of its
		// transfer queue, every workflow task waited up to 50 ms to be
		// dispatched.
		dynamicconfig.TransferProcessorMaxPollRPS.Key(): []dynamicconfig.ConstrainedValue{{Value: 1000}},
	}
	for k, v := range limits.Settings() {
		dc[dynamicconfig.MakeKey(k)] = []dynamicconfig.ConstrainedValue{{Value: v}}
	}
	return dc
}
