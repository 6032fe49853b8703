package integrations

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/metrics"
	"github.com/commerce-integration/commerce/internal/script"
)

// Scripts runs the process's mappings: one runner, whose slots bound the
// runs at once, and the programs it has compiled, by their source's digest.
type Scripts struct {
	Runner *script.Runner

	mu       sync.Mutex
	programs map[string]*list.Element // of *script.Program
	recent   list.List                // most recently used first
}

// programsKept is how many compiled programs a process keeps.
const programsKept = 256

// newScripts makes the process's scripts over its one runner.
func newScripts(r *script.Runner) *Scripts {
	return &Scripts{Runner: r, programs: map[string]*list.Element{}}
}

// Compile compiles source, or answers its failure to: EINVALID for a
// source over the size limit, or naming the line and column where it does
// not compile.
func (s *Scripts) Compile(source string) (*script.Program, error) {
	if limit := s.Runner.Limits().Source; len(source) > limit {
		return nil, domain.Errorf(domain.EINVALID, "source is %d bytes, over the limit of %d (64 KiB)", len(source), limit)
	}
	p, err := s.Runner.Compile(source)
	var se *script.Error
	if errors.As(err, &se) {
		return nil, domain.Errorf(domain.EINVALID, "source does not compile: %s", se.Error())
	}
	return p, err
}

// program is the compiled program of a mapping version, compiled once per
// process; its source is read only when it is not.
func (s *Scripts) program(ctx context.Context, d *db.DB, orgID uuid.UUID, kind db.MappingOwner, owner uuid.UUID, ref db.MappingRef) (*script.Program, error) {
	s.mu.Lock()
	if e, ok := s.programs[ref.SHA256]; ok {
		s.recent.MoveToFront(e)
		s.mu.Unlock()
		return e.Value.(*script.Program), nil
	}
	s.mu.Unlock()
	src, err := d.MappingSource(ctx, orgID, kind, owner, ref.Version)
	if err != nil {
		return nil, err
	}
	p, err := s.Runner.Compile(src)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.programs[ref.SHA256]; ok {
		return e.Value.(*script.Program), nil
	}
	s.programs[ref.SHA256] = s.recent.PushFront(p)
	if s.recent.Len() > programsKept {
		last := s.recent.Back()
		s.recent.Remove(last)
		delete(s.programs, last.Value.(*script.Program).SHA256)
	}
	return p, nil
}

// Results of a mapping's run.
const (
	MappingMapped  = "mapped"
	MappingIgnored = "ignored"
	MappingFailed  = "failed"
)

// mapped is what a mapping made of a post.
type mapped struct {
	result string
	// body is the action's body it made (result mapped).
	body []byte
	// err is why it failed: what the script threw or the limit it passed
	// ("mapping failed: …"), or a result that is not an object.
	err  string
	logs []string
	took time.Duration
}

// mapPost runs an endpoint's mapping on a post: its body as sent, its kept
// headers with every credential masked (MaskedHeaders), and the time it was
// received, which is also the clock of the run's Date. The error is
// EINVALID for a body that is not JSON, else a fault of the service (or no
// slot free within ctx), never the mapping's: that is the result.
func (s *Scripts) mapPost(ctx context.Context, p *script.Program, ep db.Endpoint, body []byte, headers map[string]string, received time.Time) (mapped, error) {
	in, err := mappingInput(body, MaskedHeaders(ep, headers), received)
	if err != nil {
		return mapped{}, err
	}
	out, err := s.Runner.Run(ctx, p, "map", in, received)
	m := mapped{logs: out.Logs, took: out.Duration}
	var se *script.Error
	switch {
	case errors.As(err, &se):
		m.result, m.err = MappingFailed, "mapping failed: "+se.Error()
	case err != nil:
		return m, err
	case out.Null():
		m.result = MappingIgnored
	case len(out.Output) == 0 || out.Output[0] != '{':
		m.result, m.err = MappingFailed, "mapped body: map must return an object, or null to ignore the post; it returned "+jsonKind(out.Output)
	default:
		m.result, m.body = MappingMapped, out.Output
	}
	return m, nil
}

// count counts a run of a post's mapping (a live post's or a replay's; a
// test run is not counted).
func (m mapped) count() { metrics.MappingRun("inbound", m.result, m.took) }

// jsonKind names the kind of a JSON value.
func jsonKind(v []byte) string {
	switch {
	case len(v) == 0:
		return "nothing"
	case v[0] == '[':
		return "an array"
	case v[0] == '"':
		return "a string"
	case v[0] == 't' || v[0] == 'f':
		return "a boolean"
	}
	return "a number"
}

// mappingInput is the argument of a mapping's map: {body, headers,
// received_at}.
func mappingInput(body []byte, headers map[string]string, received time.Time) ([]byte, error) {
	if !json.Valid(body) {
		return nil, domain.Errorf(domain.EINVALID, "the body is not valid JSON")
	}
	h, err := json.Marshal(headers)
	if err != nil {
		return nil, err
	}
	// To the millisecond, as the run's Date reads it.
	at, _ := json.Marshal(received.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	in := make([]byte, 0, len(body)+len(h)+64)
	in = append(in, `{"body":`...)
	in = append(in, body...)
	in = append(in, `,"headers":`...)
	in = append(in, h...)
	in = append(in, `,"received_at":`...)
	in = append(in, at...)
	return append(in, '}'), nil
}

// Mapping is an endpoint's mapping as the management routes show it.
type Mapping = db.MappingVersion

// EndpointMapping is an endpoint's current mapping, with its source (nil
// once mapping was ended); ENOTFOUND when it never had one.
func (m *Service) EndpointMapping(ctx context.Context, orgID, endpointID uuid.UUID) (Mapping, error) {
	if _, err := m.DB.Endpoint(ctx, orgID, endpointID); err != nil {
		return Mapping{}, err
	}
	v, err := m.DB.CurrentMapping(ctx, orgID, db.MappingOfEndpoint, endpointID)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return v, domain.Errorf(domain.ENOTFOUND, "endpoint %s has no mapping", endpointID)
	}
	return v, err
}

// EndpointMappingVersions lists an endpoint's mapping versions, newest
// first, without their source.
func (m *Service) EndpointMappingVersions(ctx context.Context, orgID, endpointID uuid.UUID) ([]Mapping, error) {
	if _, err := m.DB.Endpoint(ctx, orgID, endpointID); err != nil {
		return nil, err
	}
	return m.DB.ListMappingVersions(ctx, orgID, db.MappingOfEndpoint, endpointID)
}

// SetEndpointMapping makes source the endpoint's mapping, as its next
// version: it must compile (EINVALID naming the line and column).
func (m *Service) SetEndpointMapping(ctx context.Context, actor Actor, orgID, endpointID uuid.UUID, source string) (Mapping, error) {
	if strings.TrimSpace(source) == "" {
		return Mapping{}, domain.Errorf(domain.EINVALID, "source is empty: to end mapping, delete it")
	}
	if _, err := m.Scripts.Compile(source); err != nil {
		return Mapping{}, err
	}
	v, err := m.DB.AddMappingVersion(ctx, orgID, db.MappingOfEndpoint, endpointID, &source, string(actor))
	if err != nil {
		return v, err
	}
	m.audit(ctx, actor, orgID, "endpoint.mapping.set", "endpoint", endpointID, map[string]any{"version": v.Version, "sha256": v.SHA256})
	return v, nil
}

// EndEndpointMapping ends an endpoint's mapping with a version without
// source: its posts are taken as sent again. Ending a mapping already
// ended answers that version; ENOTFOUND when it never had one.
func (m *Service) EndEndpointMapping(ctx context.Context, actor Actor, orgID, endpointID uuid.UUID) (Mapping, error) {
	cur, err := m.EndpointMapping(ctx, orgID, endpointID)
	if err != nil || cur.Source == nil {
		return cur, err
	}
	v, err := m.DB.AddMappingVersion(ctx, orgID, db.MappingOfEndpoint, endpointID, nil, string(actor))
	if err != nil {
		return v, err
	}
	m.audit(ctx, actor, orgID, "endpoint.mapping.remove", "endpoint", endpointID, map[string]any{"version": v.Version})
	return v, nil
}

// MappingTest is a run of a mapping that stores nothing: Source (default:
// the endpoint's current version) on Body or on a stored receipt's body,
// and with DryRun the changes its action would make.
type MappingTest struct {
	Source    *string
	Body      json.RawMessage
	ReceiptID *uuid.UUID
	DryRun    bool
}

// MappingTestResult is what a test run made.
type MappingTestResult struct {
	Result     string
	MappedBody json.RawMessage
	Error      *string
	Logs       []string
	Duration   time.Duration
	// Changes, with DryRun, are the changes the mapped body's action would
	// make (nil without).
	Changes []domain.Change
	// Outcome, with DryRun, is how the action would come out.
	Outcome *domain.Outcome
}

// TestEndpointMapping runs a mapping on a body or a stored receipt without
// storing anything.
func (m *Service) TestEndpointMapping(ctx context.Context, orgID, endpointID uuid.UUID, t MappingTest) (MappingTestResult, error) {
	ep, err := m.DB.Endpoint(ctx, orgID, endpointID)
	if err != nil {
		return MappingTestResult{}, err
	}
	var prog *script.Program
	if t.Source != nil {
		if prog, err = m.Scripts.Compile(*t.Source); err != nil {
			return MappingTestResult{}, err
		}
	} else {
		cur, err := m.DB.CurrentMapping(ctx, orgID, db.MappingOfEndpoint, endpointID)
		if domain.ErrorCode(err) == domain.ENOTFOUND || (err == nil && cur.Source == nil) {
			return MappingTestResult{}, domain.Errorf(domain.EINVALID, "endpoint %s has no mapping: give source", endpointID)
		}
		if err != nil {
			return MappingTestResult{}, err
		}
		if prog, err = m.Scripts.Compile(*cur.Source); err != nil {
			return MappingTestResult{}, err
		}
	}
	body, headers, received, source := []byte(t.Body), map[string]string{}, time.Now(), db.NewID()
	switch {
	case t.ReceiptID != nil && t.Body != nil:
		return MappingTestResult{}, domain.Errorf(domain.EINVALID, "give body or receipt_id, not both")
	case t.ReceiptID != nil:
		r, err := m.DB.GetReceipt(ctx, orgID, *t.ReceiptID)
		if err == nil && r.EndpointID != endpointID {
			err = domain.Errorf(domain.ENOTFOUND, "receipt not found")
		}
		if err != nil {
			return MappingTestResult{}, err
		}
		if !r.BodyComplete() {
			return MappingTestResult{}, domain.Errorf(domain.EINVALID, "receipt %s kept only the start of its body", r.ID)
		}
		body, headers, received, source = r.RawBody(), r.Headers, r.ReceivedAt.Time, r.ID
	case t.Body == nil:
		return MappingTestResult{}, domain.Errorf(domain.EINVALID, "give body or receipt_id")
	}
	run, err := m.Scripts.mapPost(ctx, prog, ep, body, headers, received)
	if err != nil {
		return MappingTestResult{}, err
	}
	res := MappingTestResult{Result: run.result, Logs: run.logs, Duration: run.took}
	if run.err != "" {
		res.Error = &run.err
		return res, nil
	}
	if run.result != MappingMapped {
		return res, nil
	}
	res.MappedBody = run.body
	parsed, err := domain.ParseInbound(ep.Action, run.body)
	if err != nil {
		msg := "mapped body: " + domain.ErrorMessage(err)
		res.Result, res.Error = MappingFailed, &msg
		return res, nil
	}
	if t.DryRun {
		out, err := m.DB.DryRunInbound(ctx, orgID, source, parsed, m.BaseURL)
		if err != nil && domain.ErrorCode(err) == domain.EINTERNAL {
			return res, err
		}
		if err != nil {
			msg := domain.ErrorMessage(err)
			failed := domain.OutcomeFailed
			res.Error, res.Outcome, res.Changes = &msg, &failed, []domain.Change{}
			return res, nil
		}
		res.Outcome, res.Changes = &out.Outcome, out.Changes
		if res.Changes == nil {
			res.Changes = []domain.Change{}
		}
	}
	return res, nil
}
