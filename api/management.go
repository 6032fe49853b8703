package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// The management API (docs/decisions.md#management-api): inbound endpoints,
// receipts and replays (inbound_management.go), webhook subscriptions and
// deliveries and the event feed (webhook_management.go), for support staff
// and integrators. Every handler calls integrations.Service, the code the
// console and the CLI's receipts and webhook commands call too.

const (
	tagInbound  = "Inbound management"
	tagWebhooks = "Webhooks"
	tagEvents   = "Events"
)

// actor is the audit log's name for the key a request is made with.
func actor(ctx context.Context) integrations.Actor {
	return integrations.KeyActor(keyAuth(ctx).Principal.KeyID)
}

// optionalTime reads an optional RFC 3339 filter.
func optionalTime(name, raw string) (*time.Time, error) {
	if raw == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "%s is not an RFC 3339 timestamp", name)
	}
	return &t, nil
}

// byID runs a write on one record named in the path (404 when the id is
// not a UUID), as the caller's key.
func byID[T any](ctx context.Context, s *Server, raw, what string, fn func(integrations.Actor, uuid.UUID, uuid.UUID) (T, error)) (T, error) {
	var zero T
	id, err := pathID(raw, what)
	if err != nil {
		return zero, s.fail(ctx, err)
	}
	v, err := fn(actor(ctx), orgID(ctx), id)
	if err != nil {
		return zero, s.fail(ctx, err)
	}
	return v, nil
}

// NoContent is an answer without a body.
type NoContent struct{}

// managementOp is a management operation's description.
func managementOp(id, method, path, tag, summary, desc string) huma.Operation {
	return huma.Operation{OperationID: id, Method: method, Path: path, Tags: []string{tag}, Summary: summary, Description: desc}
}

// The statuses every management read and write may answer besides its own.
var (
	managementRead  = []int{http.StatusBadRequest, http.StatusNotFound}
	managementWrite = []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict}
)

func (s *Server) registerManagement() {
	s.registerInboundManagement()
	s.registerMappings()
	s.registerWebhookManagement()
	s.registerResends()
	s.registerTransformations()
}
