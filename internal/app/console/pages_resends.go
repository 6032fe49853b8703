package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
)

// resendSelection is what a bulk resend's filters select: how many
// deliveries (up to one more than a batch takes), and the first ten.
type resendSelection struct {
	Count   int
	TooMany bool
	First   []db.WebhookDelivery
}

type resendFormData struct {
	Selection     *resendSelection
	Subscriptions []db.Subscription
	Statuses      []domain.WebhookStatus
	Chosen        map[string]bool
	Filter        url.Values
	Zone          string
}

// resendFilters reads a bulk resend's filters from a form (or the query of
// the form's page, or the deliveries list's): statuses (failed, exhausted;
// none: both), subscription, event type and the time range in the form's
// zone.
func resendFilters(orgID uuid.UUID, form url.Values) (db.NewResendBatch, error) {
	in := db.NewResendBatch{OrgID: orgID, EventType: strings.TrimSpace(form.Get("event_type"))}
	for _, s := range form["status"] {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		st := domain.WebhookStatus(s)
		if !slices.Contains(db.ResendableStatuses, st) {
			return in, badFilter("A bulk resend takes failed or exhausted deliveries, not " + strconv.QuoteToASCII(s) + ".")
		}
		in.Statuses = append(in.Statuses, st)
	}
	if raw := form.Get("subscription"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			return in, badFilter("The subscription filter names no subscription: " + strconv.QuoteToASCII(raw) + " is not a subscription id.")
		}
		in.SubscriptionID = &id
	}
	loc, err := formZone(form.Get(zoneField))
	if err != nil {
		return in, err
	}
	if in.CreatedAfter, err = formTime("From", form.Get("after"), loc); err != nil {
		return in, err
	}
	if in.CreatedBefore, err = formTime("To", form.Get("before"), loc); err != nil {
		return in, err
	}
	return in, in.Validate()
}

func (c *console) resendSelection(r *http.Request, in db.NewResendBatch) (*resendSelection, error) {
	n, err := c.DB.CountResendSelection(r.Context(), in)
	if err != nil {
		return nil, err
	}
	first, err := c.DB.FirstOfResendSelection(r.Context(), in, selectionShown)
	if err != nil {
		return nil, err
	}
	return &resendSelection{Count: min(n, db.MaxResendBatch), TooMany: n > db.MaxResendBatch, First: first}, nil
}

// newBulkResend is the bulk resend form; opened with filters (from the
// deliveries list), it shows how many deliveries they select and the first
// ten, before anything starts.
func (c *console) newBulkResend(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	q := r.URL.Query()
	in, err := resendFilters(v.OrgID, q)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	loc, _ := formZone(q.Get(zoneField))
	subs, err := db.EveryPage(func(p db.Page) ([]db.Subscription, error) { return c.DB.ListSubscriptionsPage(r.Context(), v.OrgID, p) },
		func(s db.Subscription) db.Key { return db.Key{At: s.CreatedAt.Time, ID: s.ID} })
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	d := resendFormData{Subscriptions: subs, Statuses: db.ResendableStatuses, Chosen: map[string]bool{}, Filter: q, Zone: zoneName(loc)}
	for _, s := range in.Statuses {
		d.Chosen[string(s)] = true
	}
	if len(q) > 0 {
		if d.Selection, err = c.resendSelection(r, in); err != nil {
			c.failErr(w, r, err)
			return
		}
	}
	c.renderPage(w, r, http.StatusOK, "resend_new", page{Nav: "deliveries", Data: d})
}

func (c *console) startBulkResend(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	back := Prefix + "/resends/new"
	in, err := resendFilters(v.OrgID, r.PostForm)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	if r.PostForm.Get("confirm") != "yes" {
		sel, err := c.resendSelection(r, in)
		if err != nil {
			c.refused(w, r, back, err)
			return
		}
		if sel.TooMany {
			c.refused(w, r, back, domain.Errorf(domain.EINVALID, "more than %d deliveries match: narrow the filters", db.MaxResendBatch))
			return
		}
		if sel.Count == 0 {
			c.refused(w, r, back, domain.Errorf(domain.EINVALID, "no failed or exhausted delivery matches these filters (%s)", describeResend(in)))
			return
		}
		n := strconv.Itoa(sel.Count)
		c.askConfirmation(w, r, confirmData{Question: "Resend the " + n + " delivery(ies) these filters select (" + describeResend(in) + ")?",
			Button: "Resend " + n + " delivery(ies)", Back: back, Resends: sel})
		return
	}
	b, err := c.Service.StartBulkResend(r.Context(), v.actor(), in)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	c.done(w, r, Prefix+"/resends/"+b.ID.String(), "Bulk resend: "+strconv.Itoa(b.Resent)+" of "+strconv.Itoa(b.Total)+" delivery(ies) resent.")
}

// describeResend names a bulk resend's filters in words.
func describeResend(in db.NewResendBatch) string {
	statuses := make([]string, len(in.Statuses))
	for i, s := range in.Statuses {
		statuses[i] = string(s)
	}
	parts := []string{"status " + strings.Join(statuses, " or ")}
	if in.SubscriptionID != nil {
		parts = append(parts, "subscription "+in.SubscriptionID.String())
	}
	if in.EventType != "" {
		parts = append(parts, "event type "+strconv.Quote(in.EventType))
	}
	if in.CreatedAfter != nil {
		parts = append(parts, "created from "+inZone(*in.CreatedAfter))
	}
	if in.CreatedBefore != nil {
		parts = append(parts, "created until "+inZone(*in.CreatedBefore))
	}
	return strings.Join(parts, ", ")
}

// bulkResend shows a bulk resend's report.
func (c *console) bulkResend(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	b, err := c.DB.GetResendBatch(r.Context(), viewerOf(r.Context()).OrgID, id)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	c.renderPage(w, r, http.StatusOK, "resend", page{Nav: "deliveries", Title: "Bulk resend " + b.ID.String(), Data: b})
}

type bulkListData struct {
	Replays []db.ReplayBatch
	Resends []db.ResendBatch
}

// bulkActionsShown is how many of each kind of bulk action the page of
// past ones lists.
const bulkActionsShown = 50

// bulkActions lists the past bulk replays and bulk resends, newest first,
// each with its counts and a link to its report.
func (c *console) bulkActions(w http.ResponseWriter, r *http.Request) {
	org := viewerOf(r.Context()).OrgID
	replays, err := c.DB.ListReplayBatches(r.Context(), org, bulkActionsShown)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	resends, err := c.DB.ListResendBatches(r.Context(), org, bulkActionsShown)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	c.renderPage(w, r, http.StatusOK, "bulk_list", page{Nav: "replays", Data: bulkListData{Replays: replays, Resends: resends}})
}
