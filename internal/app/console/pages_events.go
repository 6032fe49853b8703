package console

import (
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
)

// eventData is an event's page: what it holds, the receipt whose effect
// emitted it, and its deliveries to every subscription.
type eventData struct {
	Event db.Event
	// Body is the envelope every delivery of the event carries.
	Body    string
	Receipt *uuid.UUID
	// ReceiptName names Receipt.
	ReceiptName string
	// Deliveries are the event's deliveries, one per subscription it went
	// to, each naming its subscription by URL.
	Deliveries []db.WebhookDelivery
	// More is set when the event has more deliveries than the page shows.
	More bool
}

// eventDeliveries is how many of an event's deliveries its page lists;
// the list of deliveries filtered by the event holds them all.
const eventDeliveries = 100

func (c *console) event(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	e, err := c.DB.GetEvent(r.Context(), v.OrgID, id)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	d := eventData{Event: e}
	body, err := json.MarshalIndent(db.Envelope{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt, Data: json.RawMessage(e.Data)}, "", "  ")
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d.Body = string(body)
	if d.Receipt, err = c.DB.EventReceipt(r.Context(), v.OrgID, id); err == nil {
		d.ReceiptName = c.receiptName(r, v.OrgID, d.Receipt)
	}
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	rows, err := c.DB.ListWebhookDeliveriesPage(r.Context(), v.OrgID, db.DeliveryListFilter{EventID: &id}, db.Page{Limit: eventDeliveries + 1})
	if err != nil {
		c.internal(w, r, err)
		return
	}
	if len(rows) > eventDeliveries {
		rows, d.More = rows[:eventDeliveries], true
	}
	d.Deliveries = rows
	c.renderPage(w, r, http.StatusOK, "event", page{Nav: "deliveries", Title: "Event " + e.ID.String(), Data: d})
}
