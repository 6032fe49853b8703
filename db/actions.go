package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// InboundResult is what carrying out an inbound post did.
type InboundResult struct {
	Outcome domain.Outcome  `json:"outcome"`
	Status  int             `json:"status"`
	Changes []domain.Change `json:"changes"`
	Extras  map[string]any  `json:"extras,omitempty"`
	// WaitingFor names the record a parked post waits for.
	WaitingFor string `json:"waiting_for,omitempty"`
	// InvoiceID and POID name the supplier invoice a supplier_invoice post
	// recorded, and its purchase order, for the three-way match that follows.
	InvoiceID  *uuid.UUID `json:"invoice_id,omitempty"`
	POID       *uuid.UUID `json:"po_id,omitempty"`
	InvoiceRef string     `json:"invoice_ref,omitempty"`
}

// Parked reports whether the post waits for a record that does not exist yet.
func (r InboundResult) Parked() bool { return r.Outcome == domain.OutcomeParked }

func parked(what string) (InboundResult, error) {
	return InboundResult{Outcome: domain.OutcomeParked, Status: 202, WaitingFor: what}, nil
}

func applied(changes []domain.Change, extras map[string]any) InboundResult {
	out := InboundResult{Outcome: domain.OutcomeApplied, Status: 200, Changes: changes, Extras: extras}
	if len(changes) == 0 {
		out.Outcome = domain.OutcomeUnchanged
	}
	if out.Changes == nil {
		out.Changes = []domain.Change{}
	}
	return out
}

// ApplyInbound carries out a post (parsed with domain.ParseInbound) in one
// transaction. Its effect is keyed by source, the receipt that first caused
// it (the original receipt, for a replay): when that receipt's effect was
// recorded before (a retried activity, a replay), the recorded result is
// returned and nothing is applied again. A post that names a record that
// does not exist yet is parked (nothing is written). Business rejections are
// domain errors (409, 422, ...).
func (d *DB) ApplyInbound(ctx context.Context, orgID, source uuid.UUID, action domain.Action, parsed any, baseURL string) (InboundResult, error) {
	var res InboundResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('effect:' || $1::text, 0))`, source); err != nil {
			return err
		}
		var stored []byte
		err := tx.QueryRow(ctx, `SELECT result FROM inbound_effects WHERE org_id = $1 AND receipt_id = $2`, orgID, source).Scan(&stored)
		if err == nil {
			return json.Unmarshal(stored, &res)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		a := &actor{ctx: ctx, tx: tx, org: orgID, baseURL: baseURL}
		switch body := parsed.(type) {
		case domain.CreateRequestBody:
			res, err = a.createRequest(body)
		case domain.UpsertCustomersBody:
			res, err = a.upsertCustomers(body)
		case domain.ProductsBody:
			res, err = a.upsertProducts(body)
		case domain.ERPOrderStatusBody:
			res, err = a.erpOrderStatus(body)
		case domain.OrderInvoiceBody:
			res, err = a.orderInvoice(body)
		case domain.POAckBody:
			res, err = a.purchaseOrderAck(body)
		case domain.SupplierInvoiceBody:
			res, err = a.supplierInvoice(body, source)
		case domain.DeliveryStatusBody:
			res, err = a.deliveryStatus(body)
		default:
			return fmt.Errorf("action %s: unexpected body %T", action, parsed)
		}
		if err != nil || res.Parked() {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO inbound_effects (org_id, receipt_id, result) VALUES ($1, $2, $3)`, orgID, source, res)
		return err
	})
	if err != nil {
		return InboundResult{}, err
	}
	return res, nil
}

// actor carries out one inbound post within its transaction.
type actor struct {
	ctx     context.Context
	tx      pgx.Tx
	org     uuid.UUID
	baseURL string
}

func (a *actor) createRequest(b domain.CreateRequestBody) (InboundResult, error) {
	if b.ExternalRef != nil {
		var id uuid.UUID
		var title string
		err := a.tx.QueryRow(a.ctx, `SELECT id, title FROM request_threads WHERE org_id = $1 AND external_ref = $2`,
			a.org, *b.ExternalRef).Scan(&id, &title)
		if err == nil {
			res := applied(nil, map[string]any{"request": a.requestRef(id, title)})
			res.Status = 202
			return res, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return InboundResult{}, err
		}
	}
	var changes []domain.Change
	var customer *uuid.UUID
	if b.Customer != nil && (b.Customer.Company != "" || b.Customer.Email != nil) {
		entry := domain.CustomerInput{Company: b.Customer.Company, Email: b.Customer.Email}
		if entry.Email != nil {
			e := strings.ToLower(strings.TrimSpace(*entry.Email))
			entry.Email = &e
		}
		id, found, err := matchCustomer(a.ctx, a.tx, a.org, entry)
		if err == nil && !found && entry.Email != nil {
			// A free-mail address matches no domain; the same address on a
			// contact is still the same customer.
			id, found, err = matchCustomerByContactEmail(a.ctx, a.tx, a.org, *entry.Email)
		}
		if err != nil {
			return InboundResult{}, err
		}
		if !found {
			if strings.TrimSpace(entry.Company) == "" {
				// Named after its business domain, or else its address.
				entry.Company = entry.MatchDomain()
				if entry.Company == "" {
					entry.Company = *entry.Email
				}
			}
			if err := entry.Normalize(); err != nil {
				return InboundResult{}, err
			}
			if _, err := upsertCustomers(a.ctx, a.tx, a.org, []domain.CustomerInput{entry}); err != nil {
				return InboundResult{}, err
			}
			if id, found, err = matchCustomerByCompany(a.ctx, a.tx, a.org, entry.Company); err != nil {
				return InboundResult{}, err
			}
			changes = append(changes, domain.Change{Entity: "customer", ID: id.String(), Ref: entry.Company, Field: "created", To: true})
		}
		if found {
			customer = &id
		}
	}
	created, err := createRequest(a.ctx, a.tx, a.org, domain.NewRequest{Text: b.Text, Title: b.Title}, customer, b.ExternalRef)
	if err != nil {
		return InboundResult{}, err
	}
	changes = append(changes, domain.Change{Entity: "request", ID: created.ID.String(), Ref: created.Title, Field: "status", To: domain.RequestActive})
	res := applied(changes, map[string]any{"request": a.requestRef(created.ID, created.Title)})
	res.Status = 202
	return res, nil
}

func (a *actor) requestRef(id uuid.UUID, title string) map[string]any {
	return map[string]any{"id": id, "title": title, "url": a.baseURL + "/ai/requests/" + id.String()}
}

// matchCustomerByContactEmail finds the customer one of whose contacts has
// the (lower-case) email address.
func matchCustomerByContactEmail(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, email string) (uuid.UUID, bool, error) {
	var id uuid.UUID
	err := tx.QueryRow(ctx, `SELECT customer_id FROM customer_contacts WHERE org_id = $1 AND lower(email) = $2
		ORDER BY created_at, id LIMIT 1`, orgID, email).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return id, false, nil
	}
	return id, err == nil, err
}

// matchCustomerByCompany finds the newest customer of a company name.
func matchCustomerByCompany(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, company string) (uuid.UUID, bool, error) {
	var id uuid.UUID
	err := tx.QueryRow(ctx, `SELECT id FROM customers WHERE org_id = $1 AND company = $2 ORDER BY created_at DESC, id DESC LIMIT 1`,
		orgID, company).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return id, false, nil
	}
	return id, err == nil, err
}

func (a *actor) upsertCustomers(b domain.UpsertCustomersBody) (InboundResult, error) {
	r, err := upsertCustomers(a.ctx, a.tx, a.org, b.Customers)
	if err != nil {
		return InboundResult{}, err
	}
	res := applied(nil, map[string]any{"created": r.Created, "updated": r.Updated})
	if r.Created+r.Updated > 0 {
		res.Outcome = domain.OutcomeApplied
	}
	return res, nil
}

func (a *actor) upsertProducts(b domain.ProductsBody) (InboundResult, error) {
	var currency string
	if err := a.tx.QueryRow(a.ctx, `SELECT currency FROM organisations WHERE id = $1`, a.org).Scan(&currency); err != nil {
		return InboundResult{}, err
	}
	var schema *domain.CatalogueSchema
	if b.SchemaID != nil {
		id, err := uuid.Parse(*b.SchemaID)
		if err != nil {
			return InboundResult{}, domain.Errorf(domain.EINVALID, "schema_id is not a UUID")
		}
		var s domain.CatalogueSchema
		err = a.tx.QueryRow(a.ctx, `SELECT id, name, fields FROM catalogue_schemas WHERE org_id = $1 AND id = $2`, a.org, id).
			Scan(&s.ID, &s.Name, &s.Fields)
		if errors.Is(err, pgx.ErrNoRows) {
			return InboundResult{}, domain.Errorf(domain.EINVALID, "schema_id %s is not a catalogue schema of the organisation", id)
		}
		if err != nil {
			return InboundResult{}, err
		}
		schema = &s
	}
	batch := b.PrepareProducts(schema, currency)
	var r UpsertResult
	if len(batch.Products) > 0 {
		var err error
		if r, err = upsertProducts(a.ctx, a.tx, a.org, batch.Products); err != nil {
			return InboundResult{}, err
		}
	}
	res := applied(nil, map[string]any{"upserted": len(batch.Products), "created": r.Created, "updated": r.Updated,
		"unchanged": r.Unchanged, "errors": batch.Errors})
	if r.Created+r.Updated > 0 {
		res.Outcome = domain.OutcomeApplied
	}
	return res, nil
}

// orderRef is an order as an inbound post finds it.
type orderRef struct {
	id          uuid.UUID
	number      string
	status      domain.OrderStatus
	currency    string
	total       int64
	trackingURL *string
}

// findOrder matches an order by order_ref (its number or the customer's PO
// reference), else by quote_ref (the order made from that quote).
func (a *actor) findOrder(orderRefText, quoteRefText *string) (*orderRef, error) {
	var o orderRef
	err := a.tx.QueryRow(a.ctx, `
		SELECT o.id, o.number, o.status, o.currency, o.total_minor, o.tracking_url FROM orders o
		WHERE o.org_id = $1 AND (
		      ($2::text IS NOT NULL AND (o.number = $2 OR o.customer_po_ref = $2))
		   OR ($2::text IS NULL AND $3::text IS NOT NULL AND o.quote_id = (SELECT id FROM quotes WHERE org_id = $1 AND number = $3)))
		ORDER BY (o.number = coalesce($2, '')) DESC, o.created_at DESC
		LIMIT 1
		FOR UPDATE`, a.org, orderRefText, quoteRefText).Scan(&o.id, &o.number, &o.status, &o.currency, &o.total, &o.trackingURL)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return &o, err
}

// moveOrder moves an order and emits order.status_changed; it returns the
// change, or nil when the order already stands there.
func (a *actor) moveOrder(o *orderRef, to domain.OrderStatus, cause string) (*domain.Change, error) {
	changed, err := domain.OrderMachine.Move(o.status, to)
	if err != nil || !changed {
		return nil, err
	}
	if _, err := a.tx.Exec(a.ctx, `UPDATE orders SET status = $3, updated_at = now() WHERE org_id = $1 AND id = $2`, a.org, o.id, to); err != nil {
		return nil, err
	}
	c := domain.Change{Entity: "order", ID: o.id.String(), Ref: o.number, Field: "status", From: o.status, To: to}
	if err := emit(a.ctx, a.tx, a.org, EventOrderStatusChanged, map[string]any{
		"id": o.id, "number": o.number, "from": o.status, "to": to, "cause": cause,
	}); err != nil {
		return nil, err
	}
	o.status = to
	return &c, nil
}

func (a *actor) erpOrderStatus(b domain.ERPOrderStatusBody) (InboundResult, error) {
	to, err := domain.ParseERPOrderStatus(b.Status)
	if err != nil {
		return InboundResult{}, err
	}
	o, err := a.findOrder(b.OrderRef, b.QuoteRef)
	if err != nil {
		return InboundResult{}, err
	}
	if o == nil {
		return parked(domain.Describe("order", b.OrderRef, b.QuoteRef))
	}
	var changes []domain.Change
	c, err := a.moveOrder(o, to, "erp")
	if err != nil {
		return InboundResult{}, err
	}
	if c != nil {
		changes = append(changes, *c)
	}
	if b.TrackingURL != nil && (o.trackingURL == nil || *o.trackingURL != *b.TrackingURL) {
		if _, err := a.tx.Exec(a.ctx, `UPDATE orders SET tracking_url = $3, updated_at = now() WHERE org_id = $1 AND id = $2`,
			a.org, o.id, *b.TrackingURL); err != nil {
			return InboundResult{}, err
		}
		changes = append(changes, domain.Change{Entity: "order", ID: o.id.String(), Ref: o.number, Field: "tracking_url", From: o.trackingURL, To: *b.TrackingURL})
	}
	return applied(changes, map[string]any{"order": map[string]any{"id": o.id, "number": o.number, "status": o.status}}), nil
}

func (a *actor) orderInvoice(b domain.OrderInvoiceBody) (InboundResult, error) {
	status := domain.InvoiceIssued
	if b.InvoiceStatus != nil {
		var err error
		if status, err = domain.ParseInvoiceStatus(*b.InvoiceStatus); err != nil {
			return InboundResult{}, err
		}
	}
	o, err := a.findOrder(b.OrderRef, b.QuoteRef)
	if err != nil {
		return InboundResult{}, err
	}
	if o == nil {
		return parked(domain.Describe("order", b.OrderRef, b.QuoteRef))
	}
	if b.Currency != nil && *b.Currency != o.currency {
		return InboundResult{}, domain.Errorf(domain.EUNPROCESSABLE, "the invoice is in %s but order %s is in %s", *b.Currency, o.number, o.currency)
	}
	if b.AmountMinor != nil && *b.AmountMinor > o.total {
		return InboundResult{}, domain.Errorf(domain.EUNPROCESSABLE, "the invoice amount %d is above order %s's total of %d", *b.AmountMinor, o.number, o.total)
	}
	var prev *domain.InvoiceStatus
	err = a.tx.QueryRow(a.ctx, `SELECT invoice_status FROM order_invoices WHERE org_id = $1 AND order_id = $2 AND invoice_ref = $3 FOR UPDATE`,
		a.org, o.id, b.InvoiceRef).Scan(&prev)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return InboundResult{}, err
	}
	if prev != nil && *prev == status {
		return applied(nil, map[string]any{"invoice_ref": b.InvoiceRef, "invoice_status": status}), nil
	}
	if _, err := a.tx.Exec(a.ctx, `
		INSERT INTO order_invoices (id, org_id, order_id, invoice_ref, invoice_status, amount_minor, currency)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (org_id, order_id, invoice_ref) DO UPDATE SET
			invoice_status = excluded.invoice_status,
			amount_minor = coalesce(excluded.amount_minor, order_invoices.amount_minor),
			currency = coalesce(excluded.currency, order_invoices.currency),
			updated_at = now()`, NewID(), a.org, o.id, b.InvoiceRef, status, b.AmountMinor, b.Currency); err != nil {
		return InboundResult{}, err
	}
	if err := emit(a.ctx, a.tx, a.org, EventOrderInvoiceRecorded, map[string]any{
		"order_id": o.id, "order_number": o.number, "invoice_ref": b.InvoiceRef, "invoice_status": status,
		"amount_minor": b.AmountMinor, "currency": b.Currency,
	}); err != nil {
		return InboundResult{}, err
	}
	c := domain.Change{Entity: "order", ID: o.id.String(), Ref: o.number, Field: "invoice:" + b.InvoiceRef, From: prev, To: status}
	return applied([]domain.Change{c}, map[string]any{"invoice_ref": b.InvoiceRef, "invoice_status": status}), nil
}

// poRef is a purchase order as an inbound post finds it.
type poRef struct {
	id          uuid.UUID
	number      string
	status      domain.PurchaseOrderStatus
	currency    string
	supplierRef *string
}

func (a *actor) findPO(number string) (*poRef, error) {
	var p poRef
	err := a.tx.QueryRow(a.ctx, `SELECT id, number, status, currency, supplier_ref FROM purchase_orders
		WHERE org_id = $1 AND number = $2 FOR UPDATE`, a.org, number).Scan(&p.id, &p.number, &p.status, &p.currency, &p.supplierRef)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return &p, err
}

func (a *actor) purchaseOrderAck(b domain.POAckBody) (InboundResult, error) {
	po, err := a.findPO(b.PONumber)
	if err != nil {
		return InboundResult{}, err
	}
	if po == nil {
		return parked(domain.Describe("purchase order", &b.PONumber))
	}
	if _, err := domain.PurchaseOrderMachine.Move(po.status, domain.POAcknowledged); err != nil {
		return InboundResult{}, err
	}
	var changes []domain.Change
	ref := func(field string, from, to any) {
		changes = append(changes, domain.Change{Entity: "purchase_order", ID: po.id.String(), Ref: po.number, Field: field, From: from, To: to})
	}
	if po.status != domain.POAcknowledged {
		ref("status", po.status, domain.POAcknowledged)
	}
	if b.SupplierRef != nil && (po.supplierRef == nil || *po.supplierRef != *b.SupplierRef) {
		ref("supplier_ref", po.supplierRef, *b.SupplierRef)
	}
	for _, l := range b.Lines {
		var positions []int
		rows, err := a.tx.Query(a.ctx, `
			UPDATE purchase_order_lines SET expected_date = $4
			WHERE org_id = $1 AND po_id = $2 AND ($3::int IS NULL OR position = $3) AND expected_date IS DISTINCT FROM $4
			RETURNING position`, a.org, po.id, l.Position, l.Date.Time)
		if err != nil {
			return InboundResult{}, err
		}
		if positions, err = pgx.CollectRows(rows, pgx.RowTo[int]); err != nil {
			return InboundResult{}, err
		}
		if l.Position != nil && len(positions) == 0 {
			var exists bool
			if err := a.tx.QueryRow(a.ctx, `SELECT EXISTS (SELECT 1 FROM purchase_order_lines WHERE org_id = $1 AND po_id = $2 AND position = $3)`,
				a.org, po.id, *l.Position).Scan(&exists); err != nil {
				return InboundResult{}, err
			}
			if !exists {
				return InboundResult{}, domain.Errorf(domain.EUNPROCESSABLE, "purchase order %s has no line %d", po.number, *l.Position)
			}
		}
		for _, p := range positions {
			ref(fmt.Sprintf("lines[%d].expected_date", p), nil, l.Date)
		}
	}
	if len(changes) == 0 {
		return applied(nil, map[string]any{"purchase_order": map[string]any{"id": po.id, "number": po.number, "status": po.status}}), nil
	}
	if _, err := a.tx.Exec(a.ctx, `
		UPDATE purchase_orders SET status = 'acknowledged', supplier_ref = coalesce($3, supplier_ref),
		       acknowledged_at = now(), updated_at = now(),
		       expected_date = coalesce((SELECT max(expected_date) FROM purchase_order_lines WHERE org_id = $1 AND po_id = $2), expected_date)
		WHERE org_id = $1 AND id = $2`, a.org, po.id, b.SupplierRef); err != nil {
		return InboundResult{}, err
	}
	if err := emit(a.ctx, a.tx, a.org, EventPurchaseOrderAcked, map[string]any{
		"id": po.id, "number": po.number, "supplier_ref": b.SupplierRef, "changes": changes,
	}); err != nil {
		return InboundResult{}, err
	}
	return applied(changes, map[string]any{"purchase_order": map[string]any{"id": po.id, "number": po.number, "status": domain.POAcknowledged}}), nil
}

func (a *actor) supplierInvoice(b domain.SupplierInvoiceBody, source uuid.UUID) (InboundResult, error) {
	po, err := a.findPO(b.PONumber)
	if err != nil {
		return InboundResult{}, err
	}
	if po == nil {
		return parked(domain.Describe("purchase order", &b.PONumber))
	}
	if po.status == domain.POCancelled {
		return InboundResult{}, domain.Errorf(domain.ECONFLICT, "purchase order %s is cancelled", po.number)
	}
	if b.Currency != nil && *b.Currency != po.currency {
		return InboundResult{}, domain.Errorf(domain.EUNPROCESSABLE, "the invoice is in %s but purchase order %s is in %s", *b.Currency, po.number, po.currency)
	}
	var id uuid.UUID
	var amount *int64
	err = a.tx.QueryRow(a.ctx, `SELECT id, amount_minor FROM supplier_invoices WHERE org_id = $1 AND po_id = $2 AND invoice_ref = $3`,
		a.org, po.id, b.InvoiceRef).Scan(&id, &amount)
	switch {
	case err == nil:
		if (amount == nil) != (b.AmountMinor == nil) || (amount != nil && *amount != *b.AmountMinor) {
			return InboundResult{}, domain.Errorf(domain.EUNPROCESSABLE, "invoice %s was received before with another amount", b.InvoiceRef)
		}
		res := applied(nil, map[string]any{"invoice_ref": b.InvoiceRef})
		res.InvoiceID, res.POID, res.InvoiceRef = &id, &po.id, b.InvoiceRef
		return res, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return InboundResult{}, err
	}
	id = NewID()
	var qty any
	if b.InvoicedQty != nil {
		qty = string(b.InvoicedQty)
	}
	if _, err := a.tx.Exec(a.ctx, `
		INSERT INTO supplier_invoices (id, org_id, po_id, invoice_ref, amount_minor, currency, invoiced_qty, match_status, receipt_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'awaiting_receipt', $8)`,
		id, a.org, po.id, b.InvoiceRef, b.AmountMinor, po.currency, qty, source); err != nil {
		return InboundResult{}, err
	}
	c := domain.Change{Entity: "supplier_invoice", ID: id.String(), Ref: b.InvoiceRef, Field: "match_status", To: domain.MatchAwaitingReceipt}
	res := applied([]domain.Change{c}, map[string]any{"invoice_ref": b.InvoiceRef, "purchase_order": map[string]any{"id": po.id, "number": po.number}})
	res.InvoiceID, res.POID, res.InvoiceRef = &id, &po.id, b.InvoiceRef
	return res, nil
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
func (a *actor) deliveryStatus(b domain.DeliveryStatusBody) (InboundResult, error) {
	to, err := domain.ParseDeliveryStatus(b.Status)
	if err != nil {
		return InboundResult{}, err
	}
	d, err := a.findDelivery(b)
	if err != nil {
		return InboundResult{}, err
	}
	if d == nil {
		return parked(domain.Describe("delivery", b.DeliveryRef, b.ConsignmentRef, b.OrderRef))
	}
	changed, err := domain.DeliveryMachine.Move(d.status, to)
	if err != nil {
		return InboundResult{}, err
	}
	var changes []domain.Change
	if changed {
		if _, err := a.tx.Exec(a.ctx, `
			UPDATE deliveries SET status = $3, updated_at = now(),
			       dispatched_at = CASE WHEN $4 AND dispatched_at IS NULL THEN now() ELSE dispatched_at END,
			       delivered_at = CASE WHEN $3 = 'delivered' THEN now() ELSE delivered_at END
			WHERE org_id = $1 AND id = $2`, a.org, d.id, to, to.Shipped()); err != nil {
			return InboundResult{}, err
		}
		changes = append(changes, domain.Change{Entity: "delivery", ID: d.id.String(), Ref: d.number, Field: "status", From: d.status, To: to})
		if err := emit(a.ctx, a.tx, a.org, EventDeliveryStatusChanged, map[string]any{
			"id": d.id, "number": d.number, "from": d.status, "to": to, "order_id": d.orderID, "tracking_url": b.TrackingURL,
		}); err != nil {
			return InboundResult{}, err
		}
	}
	if b.TrackingURL != nil && (d.trackingURL == nil || *d.trackingURL != *b.TrackingURL) {
		if _, err := a.tx.Exec(a.ctx, `UPDATE deliveries SET tracking_url = $3, updated_at = now() WHERE org_id = $1 AND id = $2`,
			a.org, d.id, *b.TrackingURL); err != nil {
			return InboundResult{}, err
		}
		changes = append(changes, domain.Change{Entity: "delivery", ID: d.id.String(), Ref: d.number, Field: "tracking_url", From: d.trackingURL, To: *b.TrackingURL})
	}
	if changed && d.orderID != nil {
		c, err := a.orderFollowsDeliveries(*d.orderID)
		if err != nil {
			return InboundResult{}, err
		}
		changes = append(changes, c...)
	}
	return applied(changes, map[string]any{"delivery": map[string]any{"id": d.id, "number": d.number, "status": to}}), nil
}

// orderFollowsDeliveries moves an order after one of its deliveries moved.
func (a *actor) orderFollowsDeliveries(orderID uuid.UUID) ([]domain.Change, error) {
	var o orderRef
	var shipped, open, delivered int
	err := a.tx.QueryRow(a.ctx, `
		SELECT o.id, o.number, o.status,
		       count(d.id) FILTER (WHERE d.status IN ('dispatched', 'in_transit', 'out_for_delivery', 'delivered', 'failed', 'returned')),
		       count(d.id) FILTER (WHERE d.status <> 'cancelled'),
		       count(d.id) FILTER (WHERE d.status = 'delivered')
		FROM orders o LEFT JOIN deliveries d ON d.org_id = o.org_id AND d.order_id = o.id
		WHERE o.org_id = $1 AND o.id = $2
		GROUP BY o.id`, a.org, orderID).Scan(&o.id, &o.number, &o.status, &shipped, &open, &delivered)
	if err != nil {
		return nil, err
	}
	var changes []domain.Change
	move := func(to domain.OrderStatus) error {
		if !domain.OrderMachine.Allowed(o.status, to) {
			return nil // a cancelled or fulfilled order stays as it is
		}
		c, err := a.moveOrder(&o, to, "deliveries")
		if c != nil {
			changes = append(changes, *c)
		}
		return err
	}
	if shipped > 0 && o.status == domain.OrderConfirmed {
		if err := move(domain.OrderInProgress); err != nil {
			return nil, err
		}
	}
	if open > 0 && delivered == open {
		if err := move(domain.OrderFulfilled); err != nil {
			return nil, err
		}
	}
	return changes, nil
}

// ---- three-way match

// MatchResult is where a supplier invoice's three-way match stands.
type MatchResult struct {
	InvoiceID  uuid.UUID          `json:"invoice_id"`
	InvoiceRef string             `json:"invoice_ref"`
	Status     domain.MatchStatus `json:"match_status"`
	Variances  []domain.Variance  `json:"variances"`
}

// MatchSupplierInvoice runs the three-way match of an invoice against its
// purchase order and the goods received: without a receipt yet it stays
// awaiting_receipt; otherwise its variances are recorded (none: matched) and
// supplier_invoice.matched or supplier_invoice.variance_raised is emitted.
// Matching again gives the same answer and emits nothing new.
func (d *DB) MatchSupplierInvoice(ctx context.Context, orgID, invoiceID uuid.UUID) (MatchResult, error) {
	var res MatchResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var poID uuid.UUID
		var amount *int64
		var qtyJSON []byte
		var tol domain.Tolerances
		err := tx.QueryRow(ctx, `
			SELECT i.id, i.invoice_ref, i.match_status, i.po_id, i.amount_minor, i.invoiced_qty,
			       o.match_qty_tolerance, o.match_amount_tolerance_pct, o.match_amount_tolerance_minor
			FROM supplier_invoices i JOIN organisations o ON o.id = i.org_id
			WHERE i.org_id = $1 AND i.id = $2 FOR UPDATE OF i`, orgID, invoiceID).
			Scan(&res.InvoiceID, &res.InvoiceRef, &res.Status, &poID, &amount, &qtyJSON, &tol.Qty, &tol.AmountPct, &tol.AmountMinor)
		if err != nil {
			return notFound(err, "supplier invoice")
		}
		if res.Status != domain.MatchAwaitingReceipt {
			res.Variances, err = invoiceVariances(ctx, tx, orgID, invoiceID)
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT l.position, l.unit_price_minor,
			       coalesce((SELECT sum(rl.qty) FROM po_receipt_lines rl
			                 WHERE rl.org_id = l.org_id AND rl.po_id = l.po_id AND rl.position = l.position), 0)
			FROM purchase_order_lines l WHERE l.org_id = $1 AND l.po_id = $2 ORDER BY l.position`, orgID, poID)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.MatchLine, error) {
			var l domain.MatchLine
			err := r.Scan(&l.Position, &l.UnitPriceMinor, &l.QtyReceived)
			return l, err
		})
		if err != nil {
			return err
		}
		qty, err := domain.ParseInvoicedQty(qtyJSON)
		if err != nil {
			return err
		}
		variances, received := domain.MatchInvoice(lines, amount, qty, tol)
		if !received {
			res.Variances = []domain.Variance{}
			return nil
		}
		res.Variances = variances
		return recordMatch(ctx, tx, orgID, invoiceID, &res)
	})
	return res, err
}

// RaiseNoReceipt records that nothing was received for an invoice within
// the time the match waits: a no_receipt variance.
func (d *DB) RaiseNoReceipt(ctx context.Context, orgID, invoiceID uuid.UUID) (MatchResult, error) {
	var res MatchResult
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT id, invoice_ref, match_status FROM supplier_invoices WHERE org_id = $1 AND id = $2 FOR UPDATE`,
			orgID, invoiceID).Scan(&res.InvoiceID, &res.InvoiceRef, &res.Status)
		if err != nil {
			return notFound(err, "supplier invoice")
		}
		if res.Status != domain.MatchAwaitingReceipt {
			res.Variances, err = invoiceVariances(ctx, tx, orgID, invoiceID)
			return err
		}
		res.Variances = []domain.Variance{{Kind: domain.VarianceNoReceipt}}
		return recordMatch(ctx, tx, orgID, invoiceID, &res)
	})
	return res, err
}

// recordMatch stores a match's variances and status (matched when there are
// none), sets that status on res, and emits the match's event.
func recordMatch(ctx context.Context, tx pgx.Tx, orgID, invoiceID uuid.UUID, res *MatchResult) error {
	status := domain.MatchMatched
	for _, v := range res.Variances {
		if _, err := tx.Exec(ctx, `
			INSERT INTO supplier_invoice_variances (id, org_id, invoice_id, kind, position, expected, actual)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, NewID(), orgID, invoiceID, v.Kind, v.Position, v.Expected, v.Actual); err != nil {
			return err
		}
		status = domain.MatchVariance
	}
	if _, err := tx.Exec(ctx, `UPDATE supplier_invoices SET match_status = $3, matched_at = now() WHERE org_id = $1 AND id = $2`,
		orgID, invoiceID, status); err != nil {
		return err
	}
	res.Status = status
	event := EventSupplierInvoiceMatched
	if status == domain.MatchVariance {
		event = EventVarianceRaised
	}
	return emit(ctx, tx, orgID, event, map[string]any{
		"invoice_id": invoiceID, "invoice_ref": res.InvoiceRef, "match_status": status, "variances": res.Variances,
	})
}

func invoiceVariances(ctx context.Context, tx pgx.Tx, orgID, invoiceID uuid.UUID) ([]domain.Variance, error) {
	rows, err := tx.Query(ctx, `SELECT kind, position, expected, actual FROM supplier_invoice_variances
		WHERE org_id = $1 AND invoice_id = $2 ORDER BY created_at, id`, orgID, invoiceID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Variance, error) {
		var v domain.Variance
		err := r.Scan(&v.Kind, &v.Position, &v.Expected, &v.Actual)
		return v, err
	})
}

// AwaitingInvoices lists the supplier invoices of one organisation waiting
// for a goods receipt (for the sweep that wakes their matches).
func (d *DB) AwaitingInvoices(ctx context.Context, orgID *uuid.UUID) ([]MatchKey, error) {
	rows, err := d.pool.Query(ctx, `SELECT org_id, po_id, invoice_ref FROM supplier_invoices
		WHERE match_status = 'awaiting_receipt' AND ($1::uuid IS NULL OR org_id = $1)`, orgID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[MatchKey])
}

// MatchKey names a supplier invoice's three-way match.
type MatchKey struct {
	OrgID      uuid.UUID
	POID       uuid.UUID
	InvoiceRef string
}
