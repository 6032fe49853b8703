package domain

// Entity names the record an event is about: a subscription whose ordering
// is per_entity receives one entity's events one at a time, in event order
// (docs/webhooks.md#ordering). The events feed shows it; the delivered
// envelope does not carry it.
type Entity struct {
	Type string `json:"type" enum:"order,customer,delivery,purchase_order,request,stock_line,supplier_invoice,receipt,product_batch,subscription,endpoint,webhook_delivery"`
	ID   string `json:"id" doc:"The record's id; for a product_batch, the event's own id (each batch is its own entity)."`
}

// The entity types.
const (
	EntityOrder           = "order"
	EntityCustomer        = "customer"
	EntityDelivery        = "delivery"
	EntityPurchaseOrder   = "purchase_order"
	EntityRequest         = "request"
	EntityStockLine       = "stock_line"
	EntitySupplierInvoice = "supplier_invoice"
	EntityReceipt         = "receipt"
	EntityProductBatch    = "product_batch"
	EntitySubscription    = "subscription"
	EntityEndpoint        = "endpoint"
	EntityWebhookDelivery = "webhook_delivery"
)

// entityNamer is event data that names its entity; every type of the
// catalogue is one (a test holds it to that).
type entityNamer interface{ Entity() Entity }

// Key is the entity as one string, type:id.
func (e Entity) Key() string { return e.Type + ":" + e.ID }

func (d CustomerEventData) Entity() Entity { return Entity{EntityCustomer, d.ID.String()} }

// Entity of a products batch has no id of its own: the event's id is
// given it when the event is written.
func (d ProductsUpsertedData) Entity() Entity      { return Entity{Type: EntityProductBatch} }
func (d RequestCreatedData) Entity() Entity        { return Entity{EntityRequest, d.ID.String()} }
func (d StockMovement) Entity() Entity             { return Entity{EntityStockLine, d.LineID.String()} }
func (d OrderStatusChangedData) Entity() Entity    { return Entity{EntityOrder, d.ID.String()} }
func (d OrderInvoiceRecordedData) Entity() Entity  { return Entity{EntityOrder, d.OrderID.String()} }
func (d DeliveryStatusChangedData) Entity() Entity { return Entity{EntityDelivery, d.ID.String()} }
func (d PurchaseOrderAcknowledgedData) Entity() Entity {
	return Entity{EntityPurchaseOrder, d.ID.String()}
}
func (d SupplierInvoiceMatchData) Entity() Entity {
	return Entity{EntitySupplierInvoice, d.InvoiceID.String()}
}
func (d InboundReceiptFailedData) Entity() Entity { return Entity{EntityReceipt, d.ReceiptID.String()} }
func (d SubscriptionFailingData) Entity() Entity {
	return Entity{EntitySubscription, d.SubscriptionID.String()}
}
func (d SubscriptionRecoveredData) Entity() Entity {
	return Entity{EntitySubscription, d.SubscriptionID.String()}
}
func (d DeliveryExhaustedData) Entity() Entity {
	return Entity{EntityWebhookDelivery, d.DeliveryID.String()}
}
func (d EndpointHealthData) Entity() Entity { return Entity{EntityEndpoint, d.EndpointID.String()} }
