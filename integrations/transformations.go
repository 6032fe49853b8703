package integrations

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/script"
)

// The transformations of webhook subscriptions
// (docs/webhooks.md#transformations): versions kept in mapping_versions,
// each change a new version, the highest one current; a version without
// source ends transforming.

// compileTransformation compiles a transformation's source, refusing
// (EINVALID) one over the size limit or that does not compile, with where.
func (m *Service) compileTransformation(source string) (*script.Program, error) {
	return m.Scripts.Compile(source)
}

// subscriptionOf refuses (ENOTFOUND) a subscription that is not one of the
// organisation's.
func (m *Service) subscriptionOf(ctx context.Context, orgID, id uuid.UUID) error {
	org, err := m.DB.SubscriptionOrg(ctx, id)
	if err == nil && org != orgID {
		err = domain.Errorf(domain.ENOTFOUND, "subscription not found")
	}
	return err
}

// SetTransformation makes source, which must compile, the subscription's
// transformation: its next version, which the next attempt of each of its
// deliveries runs.
func (m *Service) SetTransformation(ctx context.Context, actor Actor, orgID, id uuid.UUID, source string) (db.MappingVersion, error) {
	if _, err := m.compileTransformation(source); err != nil {
		return db.MappingVersion{}, err
	}
	v, err := m.DB.AddMappingVersion(ctx, orgID, db.MappingOfSubscription, id, &source, string(actor))
	if err != nil {
		return v, err
	}
	m.audit(ctx, actor, orgID, "subscription.transformation", "subscription", id, map[string]any{"version": v.Version, "sha256": v.SHA256})
	return v, nil
}

// DeleteTransformation ends the subscription's transformation: its next
// version has no source, and its deliveries carry the event as it is
// again. ENOTFOUND when it has none.
func (m *Service) DeleteTransformation(ctx context.Context, actor Actor, orgID, id uuid.UUID) (db.MappingVersion, error) {
	cur, err := m.Transformation(ctx, orgID, id)
	if err != nil {
		return cur, err
	}
	if cur.Source == nil {
		return db.MappingVersion{}, domain.Errorf(domain.ENOTFOUND, "the subscription has no transformation")
	}
	v, err := m.DB.AddMappingVersion(ctx, orgID, db.MappingOfSubscription, id, nil, string(actor))
	if err != nil {
		return v, err
	}
	m.audit(ctx, actor, orgID, "subscription.transformation", "subscription", id, map[string]any{"version": v.Version, "sha256": nil})
	return v, nil
}

// Transformation is the subscription's current version, with its source
// (nil after a removal). ENOTFOUND when it never had one.
func (m *Service) Transformation(ctx context.Context, orgID, id uuid.UUID) (db.MappingVersion, error) {
	v, err := m.DB.CurrentMapping(ctx, orgID, db.MappingOfSubscription, id)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		if err := m.subscriptionOf(ctx, orgID, id); err != nil {
			return v, err
		}
		return v, domain.Errorf(domain.ENOTFOUND, "the subscription has no transformation")
	}
	return v, err
}

// TransformationVersions lists the subscription's versions, newest first,
// without their source.
func (m *Service) TransformationVersions(ctx context.Context, orgID, id uuid.UUID) ([]db.MappingVersion, error) {
	if err := m.subscriptionOf(ctx, orgID, id); err != nil {
		return nil, err
	}
	return m.DB.ListMappingVersions(ctx, orgID, db.MappingOfSubscription, id)
}

// TestEvent is an event made up to test a transformation on: ID and
// CreatedAt are filled in when absent.
type TestEvent struct {
	ID        *uuid.UUID
	Type      string
	CreatedAt *time.Time
	Data      json.RawMessage
}

// TransformationTest is what a transformation is tested with: Source (nil:
// the subscription's current version) on one of the organisation's
// events (EventID) or on Event.
type TransformationTest struct {
	Source  *string
	EventID *uuid.UUID
	Event   *TestEvent
}

// TestTransformation runs a transformation on an event as a delivery
// would, and stores nothing.
func (m *Service) TestTransformation(ctx context.Context, orgID, id uuid.UUID, in TransformationTest) (Transformed, error) {
	if err := m.subscriptionOf(ctx, orgID, id); err != nil {
		return Transformed{}, err
	}
	event, err := m.testEvent(ctx, orgID, in)
	if err != nil {
		return Transformed{}, err
	}
	source := in.Source
	if source == nil {
		cur, err := m.Transformation(ctx, orgID, id)
		if err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
			return Transformed{}, err
		}
		if cur.Source == nil {
			return Transformed{}, domain.Errorf(domain.EINVALID, "the subscription has no transformation: give source to test one")
		}
		source = cur.Source
	}
	p, err := m.compileTransformation(*source)
	if err != nil {
		return Transformed{}, err
	}
	return Transform(ctx, m.Scripts.Runner, p, event)
}

// testEvent is the event a test runs on.
func (m *Service) testEvent(ctx context.Context, orgID uuid.UUID, in TransformationTest) (db.Envelope, error) {
	switch {
	case in.EventID != nil && in.Event != nil:
		return db.Envelope{}, domain.Errorf(domain.EINVALID, "give event_id or event, not both")
	case in.EventID != nil:
		e, err := m.DB.GetEvent(ctx, orgID, *in.EventID)
		if err != nil {
			return db.Envelope{}, err
		}
		data, err := e.Data.MarshalJSON()
		return db.Envelope{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt, Data: data}, err
	case in.Event != nil:
		if !slices.Contains(domain.EventTypes, in.Event.Type) {
			return db.Envelope{}, domain.Errorf(domain.EINVALID, "event.type: %q is not an event type", in.Event.Type)
		}
		e := db.Envelope{ID: uuid.New(), Type: in.Event.Type, CreatedAt: domain.NewTimestamp(time.Now().UTC().Truncate(time.Millisecond)),
			Data: in.Event.Data}
		if in.Event.ID != nil {
			e.ID = *in.Event.ID
		}
		if in.Event.CreatedAt != nil {
			e.CreatedAt = domain.NewTimestamp(*in.Event.CreatedAt)
		}
		if len(e.Data) == 0 {
			e.Data = json.RawMessage("{}")
		}
		return e, nil
	}
	return db.Envelope{}, domain.Errorf(domain.EINVALID, "give event_id (one of the organisation's events) or event ({type, data})")
}
