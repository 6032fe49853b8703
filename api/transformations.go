package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// The routes of a subscription's transformation
// (docs/webhooks.md#transformations): the JavaScript that reshapes each
// event into the body its receiver takes.

// TransformationVersion is one version of a subscription's transformation,
// without its source.
type TransformationVersion struct {
	Version   int              `json:"version" minimum:"1" doc:"The version: 1 for the first, one more for each change (a removal included)." example:"3"`
	SHA256    *string          `json:"sha256" doc:"The hex SHA-256 of the source; null for a version that removed the transformation." example:"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"`
	CreatedAt domain.Timestamp `json:"created_at"`
	CreatedBy string           `json:"created_by" doc:"Who made it: key:<id> for an API key, console:<email>, cli:<name>." example:"key:3f0c9a8e-5b7d-4c21-9e2f-6a1b8c3d4e5f"`
}

func newTransformationVersion(v db.MappingVersion) TransformationVersion {
	return TransformationVersion{Version: v.Version, SHA256: v.SHA256, CreatedAt: v.CreatedAt, CreatedBy: v.CreatedBy}
}

// Transformation is a subscription's current transformation with its
// source.
type Transformation struct {
	TransformationVersion
	Source *string `json:"source" doc:"The JavaScript; null after the transformation was removed (the events are sent as they are)." example:"function transform(event) { return {body: {order: event.data.number}}; }"`
}

// SetTransformationInput is PUT .../transformation.
type SetTransformationInput struct {
	IDPath
	Body struct {
		Source string `json:"source" minLength:"1" doc:"JavaScript defining function transform(event), at most 64 KiB (65,536 bytes). It is called with the event ({id, type, created_at, data}, as deliveries carry it) and returns {body, headers?}: body an object or array (sent as JSON) or a string (sent as it is), headers at most 10 more headers (string values; never Content-Type, the X-Service- headers, the signature headers webhook-id, webhook-timestamp and webhook-signature, or the connection's own); or null to skip the event for this subscription." example:"function transform(event) {\n  if (event.type !== 'order.status_changed') return null;\n  return {body: {order: event.data.number, state: event.data.to}, headers: {'X-Partner-Account': 'acme-42'}};\n}"`
	}
}

// TransformationVersionOutput is a version made.
type TransformationVersionOutput struct{ Body TransformationVersion }

// TransformationOutput is the current transformation.
type TransformationOutput struct{ Body Transformation }

// TransformationVersionsOutput lists a subscription's versions.
type TransformationVersionsOutput struct {
	Body struct {
		Versions []TransformationVersion `json:"versions" doc:"Every version, newest first (at most 1,000), without their source."`
	}
}

// TestEventInput is an event made up to test a transformation on.
type TestEventInput struct {
	ID        *uuid.UUID        `json:"id,omitempty" doc:"The event's id; a new one when absent."`
	Type      string            `json:"type" maxLength:"100" doc:"An event type (docs/webhooks.md#events)." example:"order.status_changed"`
	CreatedAt *time.Time        `json:"created_at,omitempty" doc:"When it happened (Date's clock in the script); now when absent."`
	Data      domain.JSONObject `json:"data" doc:"The event's data, as the event type's webhook documents it."`
}

// TestTransformationInput is POST .../transformation/test.
type TestTransformationInput struct {
	IDPath
	Body struct {
		Source  *string         `json:"source,omitempty" doc:"The JavaScript to test; the subscription's current transformation when absent." example:"function transform(event) { return {body: {kind: event.type, data: event.data}}; }"`
		EventID *uuid.UUID      `json:"event_id,omitempty" doc:"One of the organisation's events (GET /api/v1/events) to run it on."`
		Event   *TestEventInput `json:"event,omitempty" doc:"An event to run it on instead of a stored one."`
	}
}

// TransformationTestResult is what a transformation made of an event.
type TransformationTestResult struct {
	Result     string            `json:"result" enum:"transformed,skipped,failed" doc:"transformed: a delivery would send body with headers; skipped: it answered null, and the delivery would end skipped without a request; failed: it threw, passed a limit or answered what cannot be sent, and the attempt would fail without a request."`
	Body       any               `json:"body,omitempty" doc:"transformed: the body, as the script answered it (an object or array, sent as its JSON; a string, sent as it is)."`
	Headers    map[string]string `json:"headers,omitempty" doc:"transformed: the headers it adds."`
	Error      *string           `json:"error,omitempty" doc:"failed: why, as the attempt would record it." example:"transformation failed: TypeError: cannot read property 'number' of undefined (line 3:28)"`
	Logs       []string          `json:"logs" doc:"What console.log wrote, at most 50 lines of 1 KiB."`
	DurationMS float64           `json:"duration_ms" doc:"How long the run took, in milliseconds."`
}

// TransformationTestOutput is the answer of a test.
type TransformationTestOutput struct{ Body TransformationTestResult }

func (s *Server) registerTransformations() {
	const path = "/api/v1/webhooks/subscriptions/{id}/transformation"
	huma.Register(s.api, access(huma.Operation{OperationID: "set-webhook-transformation", Method: http.MethodPut, Path: path,
		Tags: []string{tagWebhooks}, Summary: "Set a subscription's transformation", DefaultStatus: http.StatusCreated,
		Description: "Makes `source` the subscription's transformation, as its next version: from the next attempt of each of its " +
			"deliveries, the body sent is what `transform(event)` returns, signed as sent. null skips the event (the delivery ends " +
			"skipped, without a request); a throw or a limit passed (100 ms of CPU, 32 MB, an answer over 1 MB) fails the attempt " +
			"without a request, and the delivery's retries go on. Answers 400, naming the line and column, for a source that does " +
			"not compile, and for one over 64 KiB."},
		domain.ScopeWebhooksWrite, "", http.StatusBadRequest, http.StatusNotFound), s.setTransformation)
	huma.Register(s.api, access(managementOp("get-webhook-transformation", http.MethodGet, path, tagWebhooks,
		"Read a subscription's transformation", "The current version with its source; source is null after a removal. 404 when "+
			"the subscription never had one."), domain.ScopeWebhooksRead, "", http.StatusNotFound), s.getTransformation)
	huma.Register(s.api, access(huma.Operation{OperationID: "delete-webhook-transformation", Method: http.MethodDelete, Path: path,
		Tags: []string{tagWebhooks}, Summary: "Remove a subscription's transformation",
		Description: "Ends transforming, as a new version without source: from the next attempt, deliveries carry the event as " +
			"it is. Earlier versions stay listed. 404 when the subscription has no transformation."},
		domain.ScopeWebhooksWrite, "", http.StatusNotFound), s.deleteTransformation)
	huma.Register(s.api, access(managementOp("list-webhook-transformation-versions", http.MethodGet, path+"/versions", tagWebhooks,
		"List a subscription's transformation versions", "Every version, newest first, without source (read the current one "+
			"for it); a delivery and each attempt name the version that ran."), domain.ScopeWebhooksRead, "", http.StatusNotFound),
		s.listTransformationVersions)
	huma.Register(s.api, access(managementOp("test-webhook-transformation", http.MethodPost, path+"/test", tagWebhooks,
		"Test a transformation", "Runs `source` (the current transformation when absent) on an event, one of the organisation's "+
			"(`event_id`) or one given (`event`), as a delivery would, with the same limits, and answers what it made and what it "+
			"logged. Nothing is stored or sent. Answers 400 for a source that does not compile."),
		domain.ScopeWebhooksRead, "", http.StatusBadRequest, http.StatusNotFound), s.testTransformation)
}

func (s *Server) setTransformation(ctx context.Context, in *SetTransformationInput) (*TransformationVersionOutput, error) {
	v, err := byID(ctx, s, in.ID, "subscription", func(a integrations.Actor, org, id uuid.UUID) (db.MappingVersion, error) {
		return s.manage.SetTransformation(ctx, a, org, id, in.Body.Source)
	})
	if err != nil {
		return nil, err
	}
	return &TransformationVersionOutput{Body: newTransformationVersion(v)}, nil
}

func (s *Server) getTransformation(ctx context.Context, in *IDPath) (*TransformationOutput, error) {
	return readByID[TransformationOutput](ctx, s, in.ID, "subscription", answered(s.manage.Transformation,
		func(v db.MappingVersion) Transformation {
			return Transformation{TransformationVersion: newTransformationVersion(v), Source: v.Source}
		}))
}

func (s *Server) deleteTransformation(ctx context.Context, in *IDPath) (*TransformationVersionOutput, error) {
	v, err := byID(ctx, s, in.ID, "subscription", func(a integrations.Actor, org, id uuid.UUID) (db.MappingVersion, error) {
		return s.manage.DeleteTransformation(ctx, a, org, id)
	})
	if err != nil {
		return nil, err
	}
	return &TransformationVersionOutput{Body: newTransformationVersion(v)}, nil
}

func (s *Server) listTransformationVersions(ctx context.Context, in *IDPath) (*TransformationVersionsOutput, error) {
	list, err := byID(ctx, s, in.ID, "subscription", func(_ integrations.Actor, org, id uuid.UUID) ([]db.MappingVersion, error) {
		return s.manage.TransformationVersions(ctx, org, id)
	})
	if err != nil {
		return nil, err
	}
	out := &TransformationVersionsOutput{}
	out.Body.Versions = Answers(list, newTransformationVersion)
	return out, nil
}

func (s *Server) testTransformation(ctx context.Context, in *TestTransformationInput) (*TransformationTestOutput, error) {
	test := integrations.TransformationTest{Source: in.Body.Source, EventID: in.Body.EventID}
	if e := in.Body.Event; e != nil {
		data, _ := e.Data.MarshalJSON()
		test.Event = &integrations.TestEvent{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt, Data: data}
	}
	t, err := byID(ctx, s, in.ID, "subscription", func(_ integrations.Actor, org, id uuid.UUID) (integrations.Transformed, error) {
		return s.manage.TestTransformation(ctx, org, id, test)
	})
	if err != nil {
		return nil, err
	}
	r := TransformationTestResult{Result: t.Result, Logs: t.Logs, DurationMS: float64(t.Duration.Microseconds()) / 1000}
	if r.Logs == nil {
		r.Logs = []string{}
	}
	switch t.Result {
	case integrations.TransformTransformed:
		r.Body = string(t.Body)
		if t.JSON {
			r.Body = json.RawMessage(t.Body)
		}
		r.Headers = map[string]string{}
		for _, h := range t.Headers {
			r.Headers[h.Name] = h.Value
		}
	case integrations.TransformFailed:
		msg := t.AttemptError()
		r.Error = &msg
	}
	return &TransformationTestOutput{Body: r}, nil
}
