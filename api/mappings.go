package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// MappingVersion is one version of an endpoint's mapping.
type MappingVersion struct {
	Version   int              `json:"version" minimum:"1" doc:"The version's number: 1, then one more for each change."`
	SHA256    *string          `json:"sha256" doc:"The SHA-256 of the source, hex; null for a version that ended mapping."`
	CreatedAt domain.Timestamp `json:"created_at"`
	CreatedBy string           `json:"created_by" doc:"Who made it, as the audit log names them (key:<id>, cli:<user>, console:<email>)." example:"key:01a20000-0000-7000-8000-000000000000"`
}

// MappingDetail is an endpoint's current mapping with its source.
type MappingDetail struct {
	MappingVersion
	Source *string `json:"source" doc:"The JavaScript; null once mapping was ended (DELETE)."`
}

// NewMappingVersion is the answer of a version; the CLI prints it.
func NewMappingVersion(v integrations.Mapping) MappingVersion {
	return MappingVersion{Version: v.Version, SHA256: v.SHA256, CreatedAt: v.CreatedAt, CreatedBy: v.CreatedBy}
}

// NewMappingDetail is the answer of a current mapping; the CLI prints it.
func NewMappingDetail(v integrations.Mapping) MappingDetail {
	return MappingDetail{MappingVersion: NewMappingVersion(v), Source: v.Source}
}

// MappingVersionChoice is a replay's mapping_version: a version number,
// "original" (the version the post was mapped with when it arrived), or
// "current" (the default).
type MappingVersionChoice struct{ domain.MappingChoice }

// UnmarshalJSON reads a number or one of the two words.
func (c *MappingVersionChoice) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		if n < 1 {
			return domain.Errorf(domain.EINVALID, "mapping_version must be 1 or more, not %d", n)
		}
		c.MappingChoice = domain.MappingChoice{Version: n}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return domain.Errorf(domain.EINVALID, `mapping_version must be a version number, "original" or "current"`)
	}
	if _, err := strconv.Atoi(s); err == nil {
		return domain.Errorf(domain.EINVALID, `mapping_version must be a version number, "original" or "current"`)
	}
	ch, err := domain.ParseMappingChoice(s)
	c.MappingChoice = ch
	return err
}

// MarshalJSON writes it as a request gives it.
func (c MappingVersionChoice) MarshalJSON() ([]byte, error) {
	if c.Version > 0 {
		return json.Marshal(c.Version)
	}
	return json.Marshal(c.String())
}

// Schema describes both forms.
func (MappingVersionChoice) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{
		Description: `The mapping the stored body is mapped with again: a version number, "original" (the version ` +
			`the post was mapped with when it arrived; none if none ran) or "current" (the endpoint's current mapping, the default).`,
		OneOf: []*huma.Schema{
			{Type: huma.TypeInteger, Minimum: ptr(1.0)},
			{Type: huma.TypeString, Enum: []any{"original", "current"}},
		},
		Examples: []any{"original"},
	}
}

// MappingInput is PUT /api/v1/inbound/endpoints/{id}/mapping.
type MappingInput struct {
	IDPath
	Body struct {
		Source string `json:"source" minLength:"1" maxLength:"65536" doc:"JavaScript defining function map(post): see docs/mappings.md. At most 64 KiB; it must compile (400 naming the line and column)." example:"function map(post) {\n  return {order_ref: post.body.DocNum, status: post.body.Status.toLowerCase()};\n}"`
	}
}

// MappingVersionOutput is a version just made.
type MappingVersionOutput struct {
	Body MappingVersion
}

// MappingOutput is an endpoint's current mapping.
type MappingOutput struct{ Body MappingDetail }

// MappingVersionsOutput lists an endpoint's mapping versions.
type MappingVersionsOutput struct {
	Body struct {
		Versions []MappingVersion `json:"versions" doc:"Newest first, at most 1,000; without their source."`
	}
}

// MappingTestInput is POST /api/v1/inbound/endpoints/{id}/mapping/test.
type MappingTestInput struct {
	IDPath
	Body struct {
		Source    *string         `json:"source,omitempty" maxLength:"65536" doc:"The JavaScript to run; default: the endpoint's current mapping."`
		Body      json.RawMessage `json:"body,omitempty" doc:"A body to map, as a sender would post it. Give body or receipt_id."`
		ReceiptID *uuid.UUID      `json:"receipt_id,omitempty" doc:"A receipt of this endpoint whose stored body (and headers, and time) to map."`
		DryRun    bool            `json:"dry_run,omitempty" doc:"Also work out the changes the mapped body's action would make (nothing is written)."`
	}
}

// MappingTestResult is what a test run of a mapping made.
type MappingTestResult struct {
	Result     string          `json:"result" enum:"mapped,ignored,failed" doc:"mapped: it returned the action's body; ignored: it returned null; failed: it threw, passed a limit, or returned something that is not the action's body."`
	MappedBody any             `json:"mapped_body,omitempty" doc:"What it returned (result mapped, or failed for its shape)."`
	Error      *string         `json:"error,omitempty" doc:"Why it failed: mapping failed: <message> (line L:C), mapping failed: <limit> exceeded, or mapped body: <field and rule>." example:"mapping failed: TypeError: cannot read property 'DocNum' of undefined (line 2:28)"`
	Logs       []string        `json:"logs" doc:"What console.log wrote, at most 50 lines."`
	DurationMS float64         `json:"duration_ms" doc:"How long the run took."`
	Outcome    *domain.Outcome `json:"outcome,omitempty" enum:"applied,unchanged,parked,failed" doc:"With dry_run: how the action would come out."`
	Changes    []domain.Change `json:"changes,omitempty" doc:"With dry_run: the changes the action would make."`
}

// MappingTestOutput is a test run's answer.
type MappingTestOutput struct{ Body MappingTestResult }

func (s *Server) registerMappings() {
	const path = "/api/v1/inbound/endpoints/{id}/mapping"
	huma.Register(s.api, access(huma.Operation{OperationID: "set-endpoint-mapping", Method: http.MethodPut, Path: path,
		Tags: []string{tagInbound}, Summary: "Set an endpoint's mapping", DefaultStatus: http.StatusCreated,
		Description: "Makes the JavaScript the endpoint's mapping, as its next version (versions are never changed): from " +
			"the next post on, the endpoint's posts are mapped with it before their shape is checked, and their receipts keep " +
			"the body as sent, the version and the body it made. 400 when it is over 64 KiB or does not compile (naming the " +
			"line and column). See docs/mappings.md."},
		domain.ScopeInboundWrite, "", http.StatusBadRequest, http.StatusNotFound), s.setEndpointMapping)
	huma.Register(s.api, access(managementOp("get-endpoint-mapping", http.MethodGet, path, tagInbound,
		"Read an endpoint's mapping", "The current version with its source (source null once mapping was ended). 404 when "+
			"the endpoint never had one."), domain.ScopeInboundRead, "", http.StatusNotFound), s.getEndpointMapping)
	huma.Register(s.api, access(managementOp("end-endpoint-mapping", http.MethodDelete, path, tagInbound,
		"End an endpoint's mapping", "Makes a version without source: the endpoint's posts are taken as sent again. Ending "+
			"a mapping already ended answers that version. 404 when the endpoint never had one."),
		domain.ScopeInboundWrite, "", http.StatusNotFound), s.endEndpointMapping)
	huma.Register(s.api, access(managementOp("list-endpoint-mapping-versions", http.MethodGet, path+"/versions", tagInbound,
		"List an endpoint's mapping versions", "Every version, newest first, without its source."),
		domain.ScopeInboundRead, "", http.StatusNotFound), s.listEndpointMappingVersions)
	huma.Register(s.api, access(managementOp("test-endpoint-mapping", http.MethodPost, path+"/test", tagInbound,
		"Try a mapping", "Runs a mapping (the source given, or the current version) on a body or on a stored receipt's "+
			"body, with the same limits as a post, and with dry_run works out the changes its action would make. Nothing is "+
			"stored: no version, receipt, event or change."),
		domain.ScopeInboundRead, "", http.StatusBadRequest, http.StatusNotFound), s.testEndpointMapping)
}

func (s *Server) setEndpointMapping(ctx context.Context, in *MappingInput) (*MappingVersionOutput, error) {
	v, err := byID(ctx, s, in.ID, "endpoint", func(a integrations.Actor, org, id uuid.UUID) (integrations.Mapping, error) {
		return s.manage.SetEndpointMapping(ctx, a, org, id, in.Body.Source)
	})
	if err != nil {
		return nil, err
	}
	return &MappingVersionOutput{Body: NewMappingVersion(v)}, nil
}

func (s *Server) getEndpointMapping(ctx context.Context, in *IDPath) (*MappingOutput, error) {
	return readByID[MappingOutput](ctx, s, in.ID, "endpoint", answered(s.manage.EndpointMapping, NewMappingDetail))
}

func (s *Server) endEndpointMapping(ctx context.Context, in *IDPath) (*MappingOutput, error) {
	v, err := byID(ctx, s, in.ID, "endpoint", func(a integrations.Actor, org, id uuid.UUID) (integrations.Mapping, error) {
		return s.manage.EndEndpointMapping(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &MappingOutput{Body: NewMappingDetail(v)}, nil
}

func (s *Server) listEndpointMappingVersions(ctx context.Context, in *IDPath) (*MappingVersionsOutput, error) {
	vs, err := byID(ctx, s, in.ID, "endpoint", func(_ integrations.Actor, org, id uuid.UUID) ([]integrations.Mapping, error) {
		return s.manage.EndpointMappingVersions(ctx, org, id)
	})
	if err != nil {
		return nil, err
	}
	out := &MappingVersionsOutput{}
	out.Body.Versions = Answers(vs, NewMappingVersion)
	return out, nil
}

func (s *Server) testEndpointMapping(ctx context.Context, in *MappingTestInput) (*MappingTestOutput, error) {
	res, err := byID(ctx, s, in.ID, "endpoint", func(_ integrations.Actor, org, id uuid.UUID) (integrations.MappingTestResult, error) {
		return s.manage.TestEndpointMapping(ctx, org, id, integrations.MappingTest{Source: in.Body.Source, Body: in.Body.Body,
			ReceiptID: in.Body.ReceiptID, DryRun: in.Body.DryRun})
	})
	if err != nil {
		return nil, err
	}
	return &MappingTestOutput{Body: NewMappingTestResult(res)}, nil
}

// NewMappingTestResult is the answer of a test run; the CLI prints it.
func NewMappingTestResult(r integrations.MappingTestResult) MappingTestResult {
	logs := r.Logs
	if logs == nil {
		logs = []string{}
	}
	return MappingTestResult{Result: r.Result, MappedBody: jsonOrAbsent(r.MappedBody), Error: r.Error, Logs: logs,
		DurationMS: float64(r.Duration.Microseconds()) / 1000, Outcome: r.Outcome, Changes: r.Changes}
}
