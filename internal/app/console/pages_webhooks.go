package console

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

type subscriptionsData struct {
	Subscriptions []db.Subscription
	Next          string
	EventTypes    []string
	// Since is the recovery form's default, a day ago in Zone (UTC; the
	// script turns it into the viewer's zone with the zoneField).
	Since string
	Zone  string
}

// subscriptionsPage is the organisation's subscriptions, newest first,
// with the forms that make, change and recover them.
var subscriptionsPage = listPage[struct{}, db.Subscription]{
	template: "webhooks",
	rows: func(c *console, r *http.Request, org uuid.UUID, _ struct{}, p db.Page) ([]db.Subscription, error) {
		return c.DB.ListSubscriptionsPage(r.Context(), org, p)
	},
	key: func(x db.Subscription) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID },
	data: func(_ *console, _ *http.Request, _ uuid.UUID, _ struct{}, rows []db.Subscription, next string) (any, error) {
		return subscriptionsData{Subscriptions: rows, Next: next, EventTypes: domain.EventTypes,
			Since: now().UTC().Add(-24 * time.Hour).Format("2006-01-02T15:04"), Zone: "UTC"}, nil
	},
}

type createdSubscriptionData struct {
	Subscription db.Subscription
	Secret       string
}

func (c *console) createSubscription(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	events := r.PostForm["events"]
	if _, err := domain.ParseEventTypes(strings.Join(events, ",")); err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	s, err := c.Service.CreateSubscription(r.Context(), v.actor(), db.NewSubscription{OrgID: v.OrgID,
		URL: strings.TrimSpace(r.PostForm.Get("url")), EventTypes: events})
	if err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	c.renderPage(w, r, http.StatusCreated, "subscription_created", page{Nav: "webhooks",
		Flash: "Subscription created. Copy its signing secret now: it is shown only this once.",
		Data:  createdSubscriptionData{Subscription: s.Subscription, Secret: s.Secret}})
}

func (c *console) setSubscriptionActive(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	active := r.PostForm.Get("active") == "true"
	if !active {
		receiver := id.String()
		if sub, err := c.DB.GetSubscription(r.Context(), v.OrgID, id); err == nil {
			receiver = target(sub.URL)
		}
		if !c.confirmed(w, r, "Switch off the subscription to "+receiver+"? No new deliveries will be made to it until it is switched on.",
			"Switch off", Prefix+"/webhooks") {
			return
		}
	}
	s, err := c.Service.UpdateSubscription(r.Context(), v.actor(), v.OrgID, id, db.SubscriptionChange{Active: &active})
	if err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	msg := "Subscription to " + target(s.URL) + " switched off: no new deliveries."
	if s.Active {
		msg = "Subscription to " + target(s.URL) + " switched on."
	}
	c.done(w, r, Prefix+"/webhooks", msg)
}

// setSubscriptionSettings changes how a subscription's deliveries go: its
// rate (empty: no limit), how many at once, and its ordering.
func (c *console) setSubscriptionSettings(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	ch := db.SubscriptionChange{RateLimitSet: true}
	number := func(field string) (*int, error) {
		s := strings.TrimSpace(r.PostForm.Get(field))
		if s == "" {
			return nil, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, domain.Errorf(domain.EINVALID, "%s: %q is not a whole number", field, s)
		}
		return &n, nil
	}
	if ch.RateLimit, err = number("rate_limit_per_second"); err == nil {
		ch.MaxInFlight, err = number("max_in_flight")
	}
	if err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	if o := r.PostForm.Get("ordering"); o != "" {
		ch.Ordering = &o
	}
	s, err := c.Service.UpdateSubscription(r.Context(), v.actor(), v.OrgID, id, ch)
	if err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	c.done(w, r, Prefix+"/webhooks", "Delivery settings of the subscription to "+target(s.URL)+" saved: "+settingsText(s.SubscriptionSettings)+".")
}

// settingsText says a subscription's settings in words.
func settingsText(s db.SubscriptionSettings) string {
	rate := "no rate limit"
	if s.RateLimitPerSecond != nil {
		rate = fmt.Sprintf("at most %d a second", *s.RateLimitPerSecond)
	}
	order := "in no particular order"
	if s.Ordering == db.OrderingPerEntity {
		order = "one at a time per entity, in event order"
	}
	return fmt.Sprintf("%s, %d at once, %s", rate, s.MaxInFlight, order)
}

func (c *console) recover(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	var since *time.Time
	loc, err := formZone(r.PostForm.Get(zoneField))
	if err == nil {
		since, err = formTime("Since", r.PostForm.Get("since"), loc)
	}
	if err == nil && since == nil {
		err = domain.Errorf(domain.EINVALID, "Since is required")
	}
	if err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	due, err := c.DB.RecoverableDeliveries(r.Context(), v.OrgID, id, *since)
	if err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	receiver := id.String()
	if sub, err := c.DB.GetSubscription(r.Context(), v.OrgID, id); err == nil {
		receiver = target(sub.URL)
	}
	if !c.confirmed(w, r, "Send again the "+strconv.Itoa(len(due))+" failed or exhausted deliveries to "+receiver+" made since "+
		inZone(*since)+"?", "Send "+strconv.Itoa(len(due))+" again", Prefix+"/webhooks") {
		return
	}
	n, err := c.Service.Recover(r.Context(), v.actor(), v.OrgID, id, *since)
	if err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	c.done(w, r, Prefix+"/deliveries?subscription="+id.String(), "Recovered: "+strconv.Itoa(n)+" failed or exhausted delivery(ies) sent again.")
}

type deliveriesData struct {
	Deliveries []db.WebhookDelivery
	Next       string
	Filter     url.Values
	Statuses   []domain.WebhookStatus
	// Subscriptions are the filter's choices, named by URL.
	Subscriptions []db.Subscription
	// Zone is the IANA zone the time filters are in (UTC when the
	// browser's is unknown).
	Zone string
	// ResendURL is the bulk resend form with the list's filters.
	ResendURL template.URL
}

// deliveriesPage is the organisation's webhook deliveries, newest first,
// filtered by status, subscription, event type or event.
var deliveriesPage = listPage[db.DeliveryListFilter, db.WebhookDelivery]{
	template: "deliveries",
	filter:   deliveriesFilter,
	rows: func(c *console, r *http.Request, org uuid.UUID, f db.DeliveryListFilter, p db.Page) ([]db.WebhookDelivery, error) {
		return c.DB.ListWebhookDeliveriesPage(r.Context(), org, f, p)
	},
	key: func(x db.WebhookDelivery) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID },
	data: func(c *console, r *http.Request, org uuid.UUID, f db.DeliveryListFilter, rows []db.WebhookDelivery, next string) (any, error) {
		subs, err := db.EveryPage(func(p db.Page) ([]db.Subscription, error) { return c.DB.ListSubscriptionsPage(r.Context(), org, p) },
			func(s db.Subscription) db.Key { return db.Key{At: s.CreatedAt.Time, ID: s.ID} })
		if err != nil {
			return nil, err
		}
		if f.SubscriptionID != nil && !slices.ContainsFunc(subs, func(s db.Subscription) bool { return s.ID == *f.SubscriptionID }) {
			return nil, badFilter("The subscription filter names no subscription of this organisation: " + f.SubscriptionID.String() + ".")
		}
		if err := knownFilterIDs(c, r, org, f, rows); err != nil {
			return nil, err
		}
		loc, err := formZone(r.URL.Query().Get(zoneField))
		if err != nil {
			return nil, err
		}
		resend := url.Values{}
		if f.Status == domain.WebhookFailed || f.Status == domain.WebhookExhausted {
			resend.Set("status", string(f.Status))
		}
		if f.SubscriptionID != nil {
			resend.Set("subscription", f.SubscriptionID.String())
		}
		if f.EventType != "" {
			resend.Set("event_type", f.EventType)
		}
		return deliveriesData{Deliveries: rows, Next: next, Filter: r.URL.Query(), Statuses: domain.WebhookStatuses, Subscriptions: subs,
			Zone: zoneName(loc), ResendURL: template.URL(Prefix + "/resends/new?" + resend.Encode())}, nil // #nosec G203 -- url.Values.Encode escapes every value
	},
}

// knownFilterIDs refuses an event or delivery filter that names no record
// of the organisation, rather than showing an empty list; a delivery that
// exists but that the other filters leave out still lists nothing.
func knownFilterIDs(c *console, r *http.Request, org uuid.UUID, f db.DeliveryListFilter, rows []db.WebhookDelivery) error {
	if f.EventID != nil {
		if _, err := c.DB.GetEvent(r.Context(), org, *f.EventID); domain.ErrorCode(err) == domain.ENOTFOUND {
			return badFilter("The event filter names no event of this organisation: " + f.EventID.String() + ".")
		} else if err != nil {
			return err
		}
	}
	if f.ID != nil && len(rows) == 0 {
		if _, err := c.DB.GetWebhookDelivery(r.Context(), org, *f.ID); domain.ErrorCode(err) == domain.ENOTFOUND {
			return badFilter("The delivery filter names no delivery of this organisation: " + f.ID.String() + ".")
		} else if err != nil {
			return err
		}
	}
	return nil
}

// deliveriesFilter reads the deliveries page's filters.
func deliveriesFilter(r *http.Request) (db.DeliveryListFilter, error) {
	q := r.URL.Query()
	f := db.DeliveryListFilter{Status: domain.WebhookStatus(q.Get("status")), EventType: strings.TrimSpace(q.Get("event_type"))}
	statuses := domain.WebhookStatuses
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		return f, badFilter("The status filter names a status that does not exist: " + strconv.QuoteToASCII(string(f.Status)) +
			" (one of " + domain.JoinValues(statuses) + ").")
	}
	if raw := q.Get("subscription"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return f, badFilter("The subscription filter names no subscription: " + strconv.QuoteToASCII(raw) + " is not a subscription id.")
		}
		f.SubscriptionID = &id
	}
	if raw := q.Get("event"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return f, badFilter("The event filter names no event: " + strconv.QuoteToASCII(raw) + " is not an event id.")
		}
		f.EventID = &id
	}
	if raw := strings.TrimSpace(q.Get("id")); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return f, badFilter("The delivery filter names no delivery: " + strconv.QuoteToASCII(raw) + " is not a delivery id.")
		}
		f.ID = &id
	}
	f.Ref = strings.TrimSpace(q.Get("ref"))
	var err error
	if f.Resolved, err = db.ParseResolved(q.Get("resolved"), nil); err != nil {
		return f, badFilter("The resolved filter is " + strconv.QuoteToASCII(q.Get("resolved")) + ": it takes false, true or any.")
	}
	loc, err := formZone(q.Get(zoneField))
	if err != nil {
		return f, err
	}
	if f.CreatedAfter, err = formTime("From", q.Get("after"), loc); err != nil {
		return f, err
	}
	if f.CreatedBefore, err = formTime("To", q.Get("before"), loc); err != nil {
		return f, err
	}
	if f.CreatedAfter != nil && f.CreatedBefore != nil && f.CreatedAfter.After(*f.CreatedBefore) {
		return f, badFilter("From (" + inZone(*f.CreatedAfter) + ") is later than To (" + inZone(*f.CreatedBefore) + "): no delivery can match.")
	}
	return f, nil
}

func (c *console) delivery(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	x, err := c.DB.GetWebhookDelivery(r.Context(), v.OrgID, id)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	d := deliveryData{WebhookDelivery: x}
	e, err := c.DB.GetEvent(r.Context(), v.OrgID, x.EventID)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	// What every attempt sends: the event's envelope, and these headers
	// (the per-attempt ones named, the signatures masked).
	body, err := json.MarshalIndent(db.Envelope{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt, Data: json.RawMessage(e.Data)}, "", "  ")
	if err != nil {
		c.internal(w, r, err)
		return
	}
	d.Body = string(body)
	d.Headers = [][2]string{
		{"Content-Type", "application/json"},
		{domain.HeaderEventID, e.ID.String()},
		{domain.HeaderEventType, e.Type},
		{domain.HeaderDeliveryID, x.ID.String()},
		{domain.HeaderAttempt, "the attempt's number"},
		{signature.HeaderWebhookID, e.ID.String()},
		{signature.HeaderWebhookTimestamp, "the attempt's time, in seconds"},
		{signature.HeaderWebhookSignature, "v1,*** (one per signing secret)"},
		{signature.Header, "t=<the attempt's time>,v1=*** (one per signing secret)"},
	}
	if d.Receipt, err = c.DB.EventReceipt(r.Context(), v.OrgID, x.EventID); err != nil {
		c.failErr(w, r, err)
		return
	}
	d.ReceiptName = c.receiptName(r, v.OrgID, d.Receipt)
	c.renderPage(w, r, http.StatusOK, "delivery", page{Nav: "deliveries", Title: clip(120, x.EventType+" to "+target(x.URL)), Data: d})
}

// deliveryData is a delivery's page: the delivery with its attempts, what
// each attempt sends, and the receipt whose effect emitted its event.
type deliveryData struct {
	db.WebhookDelivery
	Body    string
	Headers [][2]string
	Receipt *uuid.UUID
	// ReceiptName names Receipt.
	ReceiptName string
}

func (c *console) resend(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	back := Prefix + "/deliveries/" + id.String()
	if _, err := c.Service.Resend(r.Context(), v.actor(), v.OrgID, id); err != nil {
		c.refused(w, r, back, err)
		return
	}
	c.done(w, r, back, "Resent: an attempt of this delivery is being made now.")
}

// skip ends a delivery not delivered yet without another attempt, once
// confirmed: its entity's later deliveries go on.
func (c *console) skip(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	back := Prefix + "/deliveries/" + id.String()
	if !c.confirmed(w, r, "Skip this delivery? It ends without another attempt, and the later deliveries about the same "+
		"entity, which wait for it when the subscription orders per entity, go on. A resend can still send it.", "Skip", back) {
		return
	}
	if _, err := c.Service.Skip(r.Context(), v.actor(), v.OrgID, id); err != nil {
		c.refused(w, r, back, err)
		return
	}
	c.done(w, r, back, "Skipped: this delivery ends without another attempt.")
}
