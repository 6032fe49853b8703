package activities

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/internal/metrics"
	"github.com/commerce-integration/commerce/internal/script"
)

// programCacheSize is the most compiled transformations a worker keeps: a
// program is its bytecode (a few KB for a 64 KB script at most), and a
// transformation not kept is read and compiled again at its next attempt.
const programCacheSize = 256

// programs keeps compiled transformations by the digest of their source,
// the least recently used dropped past programCacheSize. Versions never
// change, so a digest always names the same program. Its zero value is
// ready.
type programs struct {
	mu    sync.Mutex
	bySum map[string]*list.Element
	order list.List // of *script.Program, most recently used first
}

func (c *programs) get(sum string) *script.Program {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.bySum[sum]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*script.Program)
}

func (c *programs) put(p *script.Program) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bySum == nil {
		c.bySum = map[string]*list.Element{}
	}
	if _, ok := c.bySum[p.SHA256]; ok {
		return
	}
	c.bySum[p.SHA256] = c.order.PushFront(p)
	for c.order.Len() > programCacheSize {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.bySum, last.Value.(*script.Program).SHA256)
	}
}

var (
	defaultScriptsOnce sync.Once
	defaultScripts     *script.Runner
)

// scripts is the runner of transformations: the process's (Scripts), or
// one of the default limits made at first use.
func (a *Activities) scripts() *script.Runner {
	if a.Scripts != nil {
		return a.Scripts
	}
	defaultScriptsOnce.Do(func() { defaultScripts = script.NewRunner(script.DefaultLimits, script.DefaultSlots()) })
	return defaultScripts
}

// program is the compiled current transformation of a delivery's
// subscription: from the cache, or read and compiled once.
func (a *Activities) program(ctx context.Context, t db.WebhookTarget) (*script.Program, error) {
	ref := t.Transformation
	if p := a.programs.get(ref.SHA256); p != nil {
		return p, nil
	}
	source, err := a.DB.MappingSource(ctx, t.OrgID, db.MappingOfSubscription, t.SubscriptionID, ref.Version)
	if err != nil {
		return nil, err
	}
	p, err := a.scripts().Compile(source)
	if err != nil {
		// It compiled when it was saved: the engine has changed since (a
		// *script.Error, a failure of the transformation), or the runner
		// failed.
		return nil, err
	}
	if p.SHA256 != ref.SHA256 {
		return nil, fmt.Errorf("transformation version %d: its source does not match its digest", ref.Version)
	}
	a.programs.put(p)
	return p, nil
}

// transform runs the subscription's current transformation on the
// delivery's event and counts the run. The error is the service's own
// fault (the database, a slot not found in time), which the activity's
// retries make again.
func (a *Activities) transform(ctx context.Context, t db.WebhookTarget) (integrations.Transformed, error) {
	p, err := a.program(ctx, t)
	var se *script.Error
	if errors.As(err, &se) {
		return integrations.Transformed{Result: integrations.TransformFailed,
			Error: fmt.Sprintf("version %d does not compile: %s", t.Transformation.Version, se.Error())}, nil
	}
	if err != nil {
		return integrations.Transformed{}, err
	}
	out, err := integrations.Transform(ctx, a.scripts(), p, t.Event)
	if err != nil {
		return out, err
	}
	metrics.MappingRun("outbound", out.Result, out.Duration)
	return out, nil
}
