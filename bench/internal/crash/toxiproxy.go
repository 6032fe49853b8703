package crash

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2/client"

	"github.com/commerce-integration/commerce/bench/internal/procs"
	"github.com/commerce-integration/commerce/internal/devtemporal"
)

// toxi is a toxiproxy server (toxiserver: toxiproxy's, from the module
// go.mod pins, with the slow toxic), run as a process, with the proxies a
// run routes through it: the service's Postgres (API and worker processes)
// and the workers' Temporal frontend.
type toxi struct {
	proc         *proc
	client       *toxiproxy.Client
	db, temporal *toxiproxy.Proxy
}

// startToxiproxy builds toxiserver into dir and starts it on a free
// loopback port.
func startToxiproxy(ctx context.Context, dir, logPath string) (*toxi, error) {
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "toxiproxy")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./bench/internal/crash/toxiserver")
	cmd.Dir = root
	if o, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build toxiproxy: %w\n%s", err, o)
	}
	ports, err := devtemporal.FreePorts("127.0.0.1", 1)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	c := &http.Client{Timeout: time.Second}
	p, err := startProc(ctx, "toxiproxy", bin, []string{"-host", "127.0.0.1", "-port", strconv.Itoa(ports[0])}, nil, logPath, 30*time.Second,
		func(*proc) bool {
			resp, err := c.Get("http://" + addr + "/version")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	if err != nil {
		return nil, err
	}
	return &toxi{proc: p, client: toxiproxy.NewClient(addr)}, nil
}

// proxy creates a proxy named name to upstream (host:port) on a free
// loopback port, with a slow toxic of no latency each way, before any
// connection: the faults only change the downstream one's latency and add
// and remove toxics after them, so every toxic a change interrupts can be
// interrupted (toxiserver says why that matters).
func (t *toxi) proxy(name, upstream string) (*toxiproxy.Proxy, error) {
	ports, err := devtemporal.FreePorts("127.0.0.1", 1)
	if err != nil {
		return nil, err
	}
	p, err := t.client.CreateProxy(name, "127.0.0.1:"+strconv.Itoa(ports[0]), upstream)
	if err != nil {
		return nil, t.failed(err)
	}
	for _, stream := range []string{"upstream", "downstream"} {
		if _, err := p.AddToxic("slow-"+stream, "slow", stream, 1, toxiproxy.Attributes{"latency": 0}); err != nil {
			return nil, t.failed(fmt.Errorf("toxiproxy %s: slow toxic: %w", name, err))
		}
	}
	return p, nil
}

// fresh makes the next call to toxiproxy's API open a new connection.
// Its client sends through http.DefaultClient, and its server closes a
// connection idle for 10 seconds (its ReadTimeout, with no IdleTimeout):
// a call exactly that long after the one before, as healing the 10-second
// latency fault is, could go out on a connection the server was closing
// and be answered with a reset, the change not made.
func (t *toxi) fresh() { http.DefaultClient.CloseIdleConnections() }

// failed is err from toxiproxy's API with the end of the server's log,
// which says whether it failed or hung and where.
func (t *toxi) failed(err error) error {
	return fmt.Errorf("%w\nthe end of toxiproxy's log:\n%s", err, t.proc.logTail(20))
}

// partitionToxics are the names of a partition's two toxics.
var partitionToxics = []string{"partition-up", "partition-down"}

// partition cuts p silently: a timeout toxic with timeout 0 on each
// direction holds every connection open and lets nothing through, nothing
// answered and nothing closed, as a dropped route or a firewall that drops
// packets does. New connections are accepted and go silent too.
func (t *toxi) partition(p *toxiproxy.Proxy) error {
	t.fresh()
	for i, stream := range []string{"upstream", "downstream"} {
		if _, err := p.AddToxic(partitionToxics[i], "timeout", stream, 1, toxiproxy.Attributes{"timeout": 0}); err != nil {
			return t.failed(fmt.Errorf("toxiproxy %s: timeout toxic: %w", p.Name, err))
		}
	}
	return nil
}

// heal removes the partition's toxics.
func (t *toxi) heal(p *toxiproxy.Proxy) error {
	t.fresh()
	for _, name := range partitionToxics {
		if err := p.RemoveToxic(name); err != nil {
			return t.failed(fmt.Errorf("toxiproxy %s: remove %s: %w", p.Name, name, err))
		}
	}
	return nil
}

// slow sets the latency of p's answers (downstream): each round trip
// takes that much longer; 0 heals it.
func (t *toxi) slow(p *toxiproxy.Proxy, latency time.Duration) error {
	t.fresh()
	if _, err := p.UpdateToxic("slow-downstream", 1, toxiproxy.Attributes{"latency": latency.Milliseconds()}); err != nil {
		return t.failed(fmt.Errorf("toxiproxy %s: latency %s: %w", p.Name, latency, err))
	}
	return nil
}

// throughProxy is dbURL with its host and port replaced by the proxy's.
func throughProxy(dbURL string, p *toxiproxy.Proxy) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	u.Host = p.Listen
	return u.String(), nil
}
