package domain

import (
	"encoding/json"

	"github.com/google/uuid"
)

// The fields each inbound action adds to its 2xx answer, besides those of
// every answer (InboundAnswer). An action's entry in the action table names
// its type (ActionDef.Answer), from which the OpenAPI document describes the
// action's answer; package db builds the answer from a value of it
// (AnswerFields), so the two cannot differ. The document requires none of
// them: they are absent from a parked post's answer and from a pending
// one's.

// ActionAnswer is the type of an action's own answer fields.
type ActionAnswer interface {
	// AnswerOf is the action whose answer the type describes.
	AnswerOf() Action
}

// AnswerFields is an action's own answer fields as InboundResult.Extras
// keeps them: the JSON object of a.
func AnswerFields(a ActionAnswer) map[string]any {
	b, err := json.Marshal(a)
	if err != nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil
	}
	return m
}

// RequestOpened names the request a create_request post opened or found.
type RequestOpened struct {
	ID    uuid.UUID `json:"id"`
	Title string    `json:"title"`
	URL   string    `json:"url" doc:"The request's thread in the application."`
}

// CreateRequestAnswer is what a create_request post answers besides the
// common fields.
type CreateRequestAnswer struct {
	Request RequestOpened `json:"request" doc:"The request opened, or the one its external_ref opened before."`
}

// UpsertCustomersAnswer is what an upsert_customers post answers besides
// the common fields.
type UpsertCustomersAnswer struct {
	Created int `json:"created" doc:"Customers created."`
	Updated int `json:"updated" doc:"Customers matched and updated."`
}

// UpsertProductsAnswer is what an upsert_products post answers besides the
// common fields: the counts of POST /api/v1/products/bulk.
type UpsertProductsAnswer struct {
	Upserted  int        `json:"upserted" doc:"Products written (created, updated, or already as sent)."`
	Created   int        `json:"created" doc:"New SKUs."`
	Updated   int        `json:"updated" doc:"Existing SKUs whose values changed."`
	Unchanged int        `json:"unchanged" doc:"Existing SKUs already as sent (not rewritten)."`
	Errors    []RowError `json:"errors" doc:"Rows not written, in row order."`
}

// OrderMoved names the order an erp_order_status post moved, or found
// already where the post put it.
type OrderMoved struct {
	ID     uuid.UUID   `json:"id"`
	Number string      `json:"number"`
	Status OrderStatus `json:"status" enum:"confirmed,in_progress,fulfilled,cancelled" doc:"The order's status now."`
}

// ERPOrderStatusAnswer is what an erp_order_status post answers besides
// the common fields.
type ERPOrderStatusAnswer struct {
	Order OrderMoved `json:"order" doc:"The order, with its status now."`
}

// OrderInvoiceAnswer is what an order_invoice post answers besides the
// common fields.
type OrderInvoiceAnswer struct {
	InvoiceRef    string        `json:"invoice_ref" doc:"The invoice recorded."`
	InvoiceStatus InvoiceStatus `json:"invoice_status" enum:"issued,partially_paid,paid,overdue,void" doc:"Its status now."`
}

// AckedPurchaseOrder names the purchase order a purchase_order_ack post
// acknowledged, or found acknowledged already.
type AckedPurchaseOrder struct {
	ID     uuid.UUID           `json:"id"`
	Number string              `json:"number"`
	Status PurchaseOrderStatus `json:"status" enum:"draft,sent,acknowledged,partially_received,received,closed,cancelled" doc:"The purchase order's status now."`
}

// PurchaseOrderAckAnswer is what a purchase_order_ack post answers besides
// the common fields.
type PurchaseOrderAckAnswer struct {
	PurchaseOrder AckedPurchaseOrder `json:"purchase_order" doc:"The purchase order, with its status now."`
}

// InvoicedPurchaseOrder names the purchase order a supplier invoice was
// recorded against.
type InvoicedPurchaseOrder struct {
	ID     uuid.UUID `json:"id"`
	Number string    `json:"number"`
}

// SupplierInvoiceAnswer is what a supplier_invoice post answers besides the
// common fields.
type SupplierInvoiceAnswer struct {
	InvoiceRef    string                 `json:"invoice_ref" doc:"The supplier invoice recorded, or found recorded already."`
	PurchaseOrder *InvoicedPurchaseOrder `json:"purchase_order,omitempty" doc:"The purchase order, when the post recorded the invoice (absent on a repeat of one recorded already)."`
	Match         *MatchResult           `json:"match,omitempty" doc:"The three-way match, when it ran before the answer."`
}

// DeliveryMoved names the delivery a delivery_status post moved, or found
// already where the post put it.
type DeliveryMoved struct {
	ID     uuid.UUID      `json:"id"`
	Number string         `json:"number"`
	Status DeliveryStatus `json:"status" enum:"pending,ready,dispatched,in_transit,out_for_delivery,delivered,failed,returned,cancelled" doc:"The delivery's status now."`
}

// DeliveryStatusAnswer is what a delivery_status post answers besides the
// common fields.
type DeliveryStatusAnswer struct {
	Delivery DeliveryMoved `json:"delivery" doc:"The delivery, with its status now."`
}

// AnswerOf names the action (ActionAnswer).
func (CreateRequestAnswer) AnswerOf() Action { return ActionCreateRequest }

// AnswerOf names the action (ActionAnswer).
func (UpsertCustomersAnswer) AnswerOf() Action { return ActionUpsertCustomers }

// AnswerOf names the action (ActionAnswer).
func (UpsertProductsAnswer) AnswerOf() Action { return ActionUpsertProducts }

// AnswerOf names the action (ActionAnswer).
func (ERPOrderStatusAnswer) AnswerOf() Action { return ActionERPOrderStatus }

// AnswerOf names the action (ActionAnswer).
func (OrderInvoiceAnswer) AnswerOf() Action { return ActionOrderInvoice }

// AnswerOf names the action (ActionAnswer).
func (PurchaseOrderAckAnswer) AnswerOf() Action { return ActionPurchaseOrderAck }

// AnswerOf names the action (ActionAnswer).
func (SupplierInvoiceAnswer) AnswerOf() Action { return ActionSupplierInvoice }

// AnswerOf names the action (ActionAnswer).
func (DeliveryStatusAnswer) AnswerOf() Action { return ActionDeliveryStatus }
