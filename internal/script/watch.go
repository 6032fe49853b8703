package script

import (
	"sync"
	"time"

	"modernc.org/quickjs"
)

// watchEvery is how often a run's CPU time is read.
const watchEvery = 2 * time.Millisecond

// watcher interrupts a run that has used its CPU time. It reads the CPU
// clock of the run's thread (the caller locks it), so time the thread
// spends waiting for a processor on a crowded machine is not counted;
// where that clock cannot be read, it counts real time. It looks from a
// timer, so a run shorter than watchEvery (most are) costs no goroutine
// and no wake-up of its thread.
type watcher struct {
	mu      sync.Mutex
	timer   *time.Timer
	stopped bool
	passed  bool
}

func watch(vm *quickjs.VM, limit time.Duration) *watcher {
	w := &watcher{}
	clock, ok := threadClock()
	var start int64
	if ok {
		start, ok = cpuTime(clock)
	}
	began := time.Now()
	used := func() time.Duration {
		if ok {
			if now, read := cpuTime(clock); read {
				return time.Duration(now - start)
			}
		}
		return time.Since(began)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(watchEvery, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch {
		case w.stopped:
		case used() > limit:
			w.passed = true
			vm.Interrupt()
		default:
			w.timer.Reset(watchEvery)
		}
	})
	return w
}

// stop ends the watch; the run is over. No interrupt comes after it.
func (w *watcher) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.timer.Stop()
}

// exceeded says whether the run was interrupted for its CPU time.
func (w *watcher) exceeded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.passed
}
