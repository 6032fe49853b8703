package script

import (
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/quickjs"
)

// watchEvery is how often a run's CPU time is read.
const watchEvery = 2 * time.Millisecond

// watcher interrupts a run that has used its CPU time. It reads the CPU
// clock of the run's thread (the caller locks it), so time the thread
// spends waiting for a processor on a crowded machine is not counted;
// where that clock cannot be read, it counts real time.
type watcher struct {
	done   chan struct{}
	wg     sync.WaitGroup
	passed atomic.Bool
}

func watch(vm *quickjs.VM, limit time.Duration) *watcher {
	w := &watcher{done: make(chan struct{})}
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
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		for {
			select {
			case <-w.done:
				return
			case <-t.C:
				if used() > limit {
					w.passed.Store(true)
					vm.Interrupt()
					return
				}
			}
		}
	}()
	return w
}

// stop ends the watch; the run is over.
func (w *watcher) stop() {
	close(w.done)
	w.wg.Wait()
}

// exceeded says whether the run was interrupted for its CPU time.
func (w *watcher) exceeded() bool { return w.passed.Load() }
