//go:build !linux

package script

// threadClock is not read on this system: the watcher measures real time.
func threadClock() (int32, bool) { return 0, false }

func cpuTime(int32) (int64, bool) { return 0, false }
