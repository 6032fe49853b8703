package db

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// DeliveryFilter narrows a delivery list.
type DeliveryFilter struct {
	Status  domain.DeliveryStatus
	OrderID *uuid.UUID
}

// deliveryRecords reads a delivery's row for the delivery list and a
// delivery's detail.
var deliveryRecords = records[domain.Delivery]{
	table: "deliveries", alias: "d",
	columns: `d.id, d.number, d.status, d.order_id, d.customer_id, d.carrier, d.consignment_ref, d.tracking_url,
	d.ship_to, d.dispatched_at, d.delivered_at, d.created_at, d.updated_at`,
	fields: func(d *domain.Delivery) []any {
		return []any{&d.ID, &d.Number, &d.Status, &d.OrderID, &d.CustomerID, &d.Carrier, &d.ConsignmentRef, &d.TrackingURL,
			&d.ShipTo, &d.DispatchedAt, &d.DeliveredAt, &d.CreatedAt, &d.UpdatedAt}
	},
}

// ListDeliveries lists the organisation's deliveries, newest first.
func (d *DB) ListDeliveries(ctx context.Context, orgID uuid.UUID, f DeliveryFilter, p Page) ([]domain.Delivery, error) {
	c := newConds()
	c.add("d.org_id = ?", orgID)
	c.addIf(f.Status != "", "d.status = ?", f.Status)
	c.addIf(f.OrderID != nil, "d.order_id = ?", f.OrderID)
	return deliveryRecords.list(ctx, d.pool, c, p)
}

// Delivery returns one of the organisation's deliveries with its lines and
// packages.
func (d *DB) Delivery(ctx context.Context, orgID, id uuid.UUID) (domain.DeliveryDetail, error) {
	var dl domain.DeliveryDetail
	err := d.detail(ctx, "delivery", deliveryRecords.into(&dl.Delivery),
		[]string{
			deliveryRecords.byID(""),
			`SELECT position, description, qty, order_line_position FROM delivery_lines
			 WHERE org_id = $1 AND delivery_id = $2 ORDER BY position`,
			`SELECT id, reference, weight_grams, tracking_url FROM delivery_packages
			 WHERE org_id = $1 AND delivery_id = $2 ORDER BY created_at, id`,
		}, []any{orgID, id},
		collect(&dl.Lines, func(r pgx.Row) (domain.DeliveryLine, error) {
			var l domain.DeliveryLine
			err := r.Scan(&l.Position, &l.Description, &l.Qty, &l.OrderLinePosition)
			return l, err
		}),
		collect(&dl.Packages, func(r pgx.Row) (domain.Package, error) {
			var p domain.Package
			err := r.Scan(&p.ID, &p.Reference, &p.WeightGrams, &p.TrackingURL)
			return p, err
		}))
	return dl, err
}

// deliveryRef is a delivery as an inbound post finds it.
type deliveryRef struct {
	id          uuid.UUID
	number      string
	status      domain.DeliveryStatus
	orderID     *uuid.UUID
	trackingURL *string
}

func (a *actor) findDelivery(b domain.DeliveryStatusBody) (*deliveryRef, error) {
	// Only the first reference given is looked up (see the query).
	var err error
	switch {
	case b.DeliveryRef != nil:
		b.DeliveryRef, err = a.spelling("delivery", b.DeliveryRef, deliverySpellings)
	case b.ConsignmentRef != nil:
		b.ConsignmentRef, err = a.spelling("consignment", b.ConsignmentRef, consignmentSpellings)
	default:
		b.OrderRef, err = a.spelling("order", b.OrderRef, orderSpellings)
	}
	if err != nil {
		return nil, err
	}
	var found []deliveryRef
	rows, err := a.tx.Query(a.ctx, `
		SELECT d.id, d.number, d.status, d.order_id, d.tracking_url FROM deliveries d
		WHERE d.org_id = $1 AND (
		      ($2::text IS NOT NULL AND d.number = $2)
		   OR ($2::text IS NULL AND $3::text IS NOT NULL AND d.consignment_ref = $3)
		   OR ($2::text IS NULL AND $3::text IS NULL AND d.order_id IN
		        (SELECT id FROM orders WHERE org_id = $1 AND (number = $4 OR customer_po_ref = $4))
		       AND d.status NOT IN ('delivered', 'returned', 'cancelled')))
		ORDER BY d.created_at, d.id
		FOR UPDATE`, a.org, b.DeliveryRef, b.ConsignmentRef, b.OrderRef)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var d deliveryRef
		if err := rows.Scan(&d.id, &d.number, &d.status, &d.orderID, &d.trackingURL); err != nil {
			rows.Close()
			return nil, err
		}
		found = append(found, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	switch {
	case len(found) == 0:
		return nil, nil
	case len(found) > 1 && b.DeliveryRef == nil && b.ConsignmentRef == nil:
		return nil, domain.Errorf(domain.EUNPROCESSABLE, "order %s has %d open deliveries: name one with delivery_ref", *b.OrderRef, len(found))
	case len(found) > 1:
		return nil, domain.Errorf(domain.EUNPROCESSABLE, "consignment %s names %d deliveries: name one with delivery_ref", *b.ConsignmentRef, len(found))
	}
	return &found[0], nil
}

// deliveryStatus moves a delivery and lets its order follow: once any of
// the order's deliveries has left (dispatched or later), a confirmed order
// moves to in_progress; once every delivery that is not cancelled is
// delivered, the order is fulfilled. All in one transaction.
// DeliveryStatus carries out a delivery_status post (domain.ActionApplier).
func (a *actor) DeliveryStatus(b domain.DeliveryStatusBody) (domain.InboundResult, error) {
	to, err := domain.ParseDeliveryStatus(b.Status)
	if err != nil {
		return domain.InboundResult{}, err
	}
	d, err := a.findDelivery(b)
	if err != nil {
		return domain.InboundResult{}, err
	}
	if d == nil {
		// findDelivery looks by the first reference given, in this order.
		keys := waitKey(domain.WaitDelivery, b.DeliveryRef)
		if keys == nil {
			keys = waitKey(domain.WaitConsignment, b.ConsignmentRef)
		}
		if keys == nil {
			keys = waitKey(domain.WaitOrder, b.OrderRef)
		}
		return parked(domain.Describe("delivery", b.DeliveryRef, b.ConsignmentRef, b.OrderRef), keys...)
	}
	changed, err := domain.DeliveryMachine.Move(d.status, to)
	if err != nil {
		return domain.InboundResult{}, err
	}
	var changes []domain.Change
	if changed {
		if _, err := a.tx.Exec(a.ctx, `
			UPDATE deliveries SET status = $3, updated_at = now(),
			       dispatched_at = CASE WHEN $4 AND dispatched_at IS NULL THEN now() ELSE dispatched_at END,
			       delivered_at = CASE WHEN $3 = 'delivered' THEN now() ELSE delivered_at END
			WHERE org_id = $1 AND id = $2`, a.org, d.id, to, to.Shipped()); err != nil {
			return domain.InboundResult{}, err
		}
		changes = append(changes, domain.Change{Entity: "delivery", ID: d.id.String(), Ref: d.number, Field: "status", From: d.status, To: to})
		if err := emit(a.ctx, a.tx, a.org, domain.DeliveryStatusChanged.New(domain.DeliveryStatusChangedData{
			ID: d.id, Number: d.number, From: d.status, To: to, OrderID: d.orderID, TrackingURL: b.TrackingURL,
		})); err != nil {
			return domain.InboundResult{}, err
		}
	}
	if b.TrackingURL != nil && (d.trackingURL == nil || *d.trackingURL != *b.TrackingURL) {
		if _, err := a.tx.Exec(a.ctx, `UPDATE deliveries SET tracking_url = $3, updated_at = now() WHERE org_id = $1 AND id = $2`,
			a.org, d.id, *b.TrackingURL); err != nil {
			return domain.InboundResult{}, err
		}
		changes = append(changes, domain.Change{Entity: "delivery", ID: d.id.String(), Ref: d.number, Field: "tracking_url", From: d.trackingURL, To: *b.TrackingURL})
	}
	if changed && d.orderID != nil {
		c, err := a.orderFollowsDeliveries(*d.orderID)
		if err != nil {
			return domain.InboundResult{}, err
		}
		changes = append(changes, c...)
	}
	return applied(changes, domain.DeliveryStatusAnswer{Delivery: domain.DeliveryMoved{ID: d.id, Number: d.number, Status: to}}), nil
}

// orderFollowsDeliveries moves an order after one of its deliveries moved,
// by domain.OrderFollowsDeliveries.
func (a *actor) orderFollowsDeliveries(orderID uuid.UUID) ([]domain.Change, error) {
	var o orderRef
	var deliveries []domain.DeliveryStatus
	err := a.tx.QueryRow(a.ctx, `
		SELECT o.id, o.number, o.status, coalesce(array_agg(d.status) FILTER (WHERE d.id IS NOT NULL), '{}')
		FROM orders o LEFT JOIN deliveries d ON d.org_id = o.org_id AND d.order_id = o.id
		WHERE o.org_id = $1 AND o.id = $2
		GROUP BY o.id`, a.org, orderID).Scan(&o.id, &o.number, &o.status, &deliveries)
	if err != nil {
		return nil, err
	}
	var changes []domain.Change
	for _, to := range domain.OrderFollowsDeliveries(o.status, deliveries) {
		c, err := a.moveOrder(&o, to, "deliveries")
		if err != nil {
			return nil, err
		}
		if c != nil {
			changes = append(changes, *c)
		}
	}
	return changes, nil
}
