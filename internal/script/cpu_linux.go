package script

import "golang.org/x/sys/unix"

// threadClock is the CPU clock of the calling thread, to be read from any
// thread: Linux's clock id for a thread's own CPU time.
func threadClock() (clockID int32, ok bool) {
	tid := unix.Gettid()
	return int32(^uint32(tid)<<3 | 6), true
}

// cpuTime reads a thread's CPU clock, in nanoseconds.
func cpuTime(clockID int32) (int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(clockID, &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}
