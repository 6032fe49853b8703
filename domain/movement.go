package domain

import (
	"crypto/sha256"
	"encoding/json"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/google/uuid"
)

// MaxMovementQty bounds one movement's quantity, so that a balance, a sum
// of movements, stays far inside what the storage and a float64 can hold.
const MaxMovementQty = 1e12

// MovementInput is a stock movement as a person (or an integration) writes it.
type MovementInput struct {
	Kind           MovementKind `json:"kind" enum:"adjustment,transfer,scrap,return,receipt" doc:"adjustment (qty signed, not 0), scrap (removes qty), return and receipt (add qty), transfer (moves qty to to_location_id)."`
	ProductID      *uuid.UUID   `json:"product_id,omitempty" doc:"Names the stock with location_id (the default location when omitted)."`
	LocationID     *uuid.UUID   `json:"location_id,omitempty" doc:"Where the stock is; needed with product_id when not the default location."`
	LineID         *uuid.UUID   `json:"line_id,omitempty" doc:"Names the stock line directly, instead of product_id and location_id."`
	ToLocationID   *uuid.UUID   `json:"to_location_id,omitempty" doc:"Destination of a transfer."`
	Qty            float64      `json:"qty" doc:"Quantity: signed for an adjustment, more than zero otherwise; at most 1e12 either way."`
	UnitCostMinor  *int64       `json:"unit_cost_minor,omitempty" minimum:"0" doc:"Unit cost in minor units; a receipt sets the line's unit cost."`
	IdempotencyKey *string      `json:"idempotency_key,omitempty" maxLength:"200" doc:"A repeated key returns the first result (200) instead of moving stock again; with another body it answers 409."`
	Reference      *string      `json:"reference,omitempty" maxLength:"200" doc:"Free text, e.g. a stock-take or returns reference."`
}

// Normalize checks the movement's shape for its kind.
func (m *MovementInput) Normalize() error {
	if !slices.Contains(MovementKinds, m.Kind) {
		return Errorf(EINVALID, "kind %q is not adjustment, transfer, scrap, return or receipt", m.Kind)
	}
	switch {
	case math.Abs(m.Qty) > MaxMovementQty:
		return Errorf(EINVALID, "qty must be at most %g either way", MaxMovementQty)
	case m.Kind == MoveAdjustment && m.Qty == 0:
		return Errorf(EINVALID, "an adjustment needs a qty other than 0")
	case m.Kind != MoveAdjustment && m.Qty <= 0:
		return Errorf(EINVALID, "a %s needs a qty more than 0", m.Kind)
	}
	switch {
	case m.LineID != nil && (m.ProductID != nil || m.LocationID != nil):
		return Errorf(EINVALID, "name the stock by line_id, or by product_id and location_id, not both")
	case m.LineID == nil && m.ProductID == nil:
		return Errorf(EINVALID, "line_id or product_id is required")
	case m.Kind == MoveTransfer && m.ToLocationID == nil:
		return Errorf(EINVALID, "a transfer needs to_location_id")
	case m.Kind != MoveTransfer && m.ToLocationID != nil:
		return Errorf(EINVALID, "to_location_id is only for transfers")
	case m.UnitCostMinor != nil && m.Kind != MoveReceipt:
		return Errorf(EINVALID, "unit_cost_minor is only for receipts")
	case m.UnitCostMinor != nil && *m.UnitCostMinor < 0:
		return Errorf(EINVALID, "unit_cost_minor must be zero or more")
	}
	if err := noNUL("idempotency_key or reference", m.IdempotencyKey, m.Reference); err != nil {
		return err
	}
	m.IdempotencyKey = trimmedOrNil(m.IdempotencyKey)
	m.Reference = trimmedOrNil(m.Reference)
	if m.IdempotencyKey != nil && utf8.RuneCountInString(*m.IdempotencyKey) > 200 {
		return Errorf(EINVALID, "idempotency_key is longer than 200 characters")
	}
	if m.Reference != nil && utf8.RuneCountInString(*m.Reference) > 200 {
		return Errorf(EINVALID, "reference is longer than 200 characters")
	}
	return nil
}

// Delta is the change the movement makes to the stock it names (a transfer
// adds the same quantity at its destination).
func (m MovementInput) Delta() float64 {
	if m.Kind == MoveScrap || m.Kind == MoveTransfer {
		return -m.Qty
	}
	return m.Qty // adjustment (signed), return, receipt
}

// Fingerprint identifies the movement's content, so a repeated idempotency
// key can be told apart from a reused one carrying another body.
func (m MovementInput) Fingerprint() []byte {
	c := m
	c.IdempotencyKey = nil
	b, _ := json.Marshal(c)
	h := sha256.Sum256(b)
	return h[:]
}
