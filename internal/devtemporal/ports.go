package devtemporal

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
)

func portFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("%s:%d is in use (another Temporal server or `commerce dev` running?): %w", ip, port, err)
	}
	return l.Close()
}

// handedOut holds every port freePorts has returned in this process. The
// server binds its ports a moment after they are chosen; a server starting
// beside it in the same process (tests start several at once) must not be
// handed one of them in that moment, so no port is handed out twice.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePorts is freePorts, for a Temporal server run as a process of its
// own (bench/internal/crash): its membership ports must fit the Postgres
// schema's smallint too.
func FreePorts(ip string, n int) ([]int, error) { return freePorts(ip, n) }

// freePorts finds n ports free on ip, between 20000 and 32767, that this
// process has not handed out before: the Postgres schema keeps the services'
// membership ports in a smallint (a port from the kernel's ephemeral range,
// 32768 and up, does not fit), and a port there is not handed to another
// listener on port 0 between this check and the bind.
func freePorts(ip string, n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	ports := make([]int, 0, n)
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries >= 1000 {
			return nil, fmt.Errorf("no %d free ports between 20000 and 32767 on %s", n, ip)
		}
		port := 20000 + rand.IntN(12768)
		if handedOut.ports[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
		if err != nil {
			continue
		}
		listeners = append(listeners, l)
		ports = append(ports, port)
	}
	for _, p := range ports {
		handedOut.ports[p] = true
	}
	return ports, nil
}
