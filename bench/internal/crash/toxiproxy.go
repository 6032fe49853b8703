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

// toxi is a toxiproxy server, built from the module go.mod pins and run as
// a process, with the proxies a run routes through it: the service's
// Postgres (API and worker processes) and the workers' Temporal frontend.
type toxi struct {
	proc         *proc
	client       *toxiproxy.Client
	db, temporal *toxiproxy.Proxy
}

// startToxiproxy builds the server into dir and starts it on a free
// loopback port.
func startToxiproxy(ctx context.Context, dir, logPath string) (*toxi, error) {
	root, err := procs.ModuleRoot(ctx)
	if err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, "toxiproxy")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/Shopify/toxiproxy/v2/cmd/server")
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
// loopback port.
func (t *toxi) proxy(name, upstream string) (*toxiproxy.Proxy, error) {
	ports, err := devtemporal.FreePorts("127.0.0.1", 1)
	if err != nil {
		return nil, err
	}
	return t.client.CreateProxy(name, "127.0.0.1:"+strconv.Itoa(ports[0]), upstream)
}

// partitionToxics are the names of a partition's two toxics.
var partitionToxics = []string{"partition-up", "partition-down"}

// partition cuts p silently: a timeout toxic with timeout 0 on each
// direction holds every connection open and lets nothing through, nothing
// answered and nothing closed, as a dropped route or a firewall that drops
// packets does. New connections are accepted and go silent too.
func partition(p *toxiproxy.Proxy) error {
	for i, stream := range []string{"upstream", "downstream"} {
		if _, err := p.AddToxic(partitionToxics[i], "timeout", stream, 1, toxiproxy.Attributes{"timeout": 0}); err != nil {
			return fmt.Errorf("toxiproxy %s: timeout toxic: %w", p.Name, err)
		}
	}
	return nil
}

// heal removes the partition's toxics.
func heal(p *toxiproxy.Proxy) error {
	for _, name := range partitionToxics {
		if err := p.RemoveToxic(name); err != nil {
			return fmt.Errorf("toxiproxy %s: remove %s: %w", p.Name, name, err)
		}
	}
	return nil
}

// slow adds latency to p's answers (downstream): each round trip takes
// that much longer.
func slow(p *toxiproxy.Proxy, latency time.Duration) error {
	_, err := p.AddToxic("latency", "latency", "downstream", 1, toxiproxy.Attributes{"latency": latency.Milliseconds()})
	return err
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
