package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

type receiptsData struct {
	Receipts  []integrations.ReceiptSummary
	Next      string
	Endpoints map[uuid.UUID]integrations.EndpointItem
	// EndpointList is every endpoint, for the filter.
	EndpointList []integrations.EndpointItem
	Filter       url.Values
	Outcomes     []domain.Outcome
	Chosen       map[string]bool
	// BulkURL is the bulk replay form with the list's filters.
	BulkURL template.URL
	// Zone is the IANA zone the time filters are in (zoneField; UTC when
	// the query names none).
	Zone string
}

// allEndpoints lists every endpoint of the organisation (for names and the
// filter), newest first.
func (c *console) allEndpoints(r *http.Request, orgID uuid.UUID) ([]integrations.EndpointItem, error) {
	var out []integrations.EndpointItem
	p := db.Page{Limit: 500}
	for {
		list, err := c.Service.Endpoints(r.Context(), orgID, p)
		if err != nil {
			return nil, err
		}
		out = append(out, list...)
		if len(list) < p.Limit {
			return out, nil
		}
		last := list[len(list)-1]
		p.After = &db.Key{At: last.CreatedAt.Time, ID: last.ID}
	}
}

func (c *console) receipts(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	q := r.URL.Query()
	f := db.OrgReceiptFilter{Ref: strings.TrimSpace(q.Get("ref"))}
	var err error
	if raw := q.Get("endpoint"); raw != "" {
		id, perr := uuid.Parse(raw)
		if perr != nil {
			c.fail(w, r, http.StatusBadRequest, "The endpoint filter names no endpoint.")
			return
		}
		f.EndpointID = &id
	}
	chosen := map[string]bool{}
	for _, o := range q["outcome"] {
		for _, part := range strings.Split(o, ",") {
			if part = strings.TrimSpace(part); part != "" {
				chosen[part] = true
			}
		}
	}
	names := make([]string, 0, len(chosen))
	for _, o := range domain.Outcomes {
		if chosen[string(o)] {
			names = append(names, string(o))
		}
	}
	if len(names) != len(chosen) {
		c.fail(w, r, http.StatusBadRequest, "The outcome filter names an outcome that does not exist.")
		return
	}
	if f.Outcomes, err = domain.ParseOutcomes(strings.Join(names, ",")); err != nil {
		c.failErr(w, r, err)
		return
	}
	loc, err := formZone(q.Get(zoneField))
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	if f.ReceivedAfter, err = formTime("From", q.Get("after"), loc); err != nil {
		c.failErr(w, r, err)
		return
	}
	if f.ReceivedBefore, err = formTime("To", q.Get("before"), loc); err != nil {
		c.failErr(w, r, err)
		return
	}
	p, err := pageKey(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	list, err := c.Service.ListReceipts(r.Context(), v.OrgID, f, p)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	eps, err := c.allEndpoints(r, v.OrgID)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	d := receiptsData{Endpoints: map[uuid.UUID]integrations.EndpointItem{}, Filter: q, Outcomes: domain.Outcomes, Chosen: chosen,
		Zone: zoneName(loc)}
	for _, e := range eps {
		d.Endpoints[e.ID] = e
	}
	d.Receipts, d.Next = nextPage(r, list, func(x integrations.ReceiptSummary) (domain.Timestamp, uuid.UUID) { return x.ReceivedAt, x.ID })
	bulk := url.Values{}
	// The times with their zone: the form selects what the list showed.
	for k, key := range map[string]string{"endpoint": "endpoint", "after": "after", "before": "before", zoneField: zoneField, "ref": "ref"} {
		if s := q.Get(k); s != "" {
			bulk.Set(key, s)
		}
	}
	if len(names) > 0 {
		bulk.Set("outcome", strings.Join(names, ","))
	}
	// Built here and passed as a URL: the template would escape a query
	// string put in its href as one value (the form then opened with none
	// of the filters).
	d.BulkURL = template.URL(Prefix + "/replays/new?" + bulk.Encode()) // #nosec G203 -- url.Values.Encode escapes every value
	d.EndpointList = eps
	c.render(w, r, http.StatusOK, "receipts", d)
}

type receiptData struct {
	Receipt  integrations.ReceiptDetail
	Endpoint *integrations.EndpointItem
	Body     string
	Answer   string
	Headers  []header
	Currency string
	Amounts  []amount
}

type header struct{ Name, Value string }

func (c *console) loadReceipt(w http.ResponseWriter, r *http.Request) (receiptData, bool) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return receiptData{}, false
	}
	v := viewerOf(r.Context())
	d, err := c.Service.Receipt(r.Context(), v.OrgID, id)
	if err != nil {
		c.failErr(w, r, err)
		return receiptData{}, false
	}
	out := receiptData{Receipt: d, Body: pretty(d.Body), Answer: pretty(d.Response), Currency: v.Currency, Amounts: amounts(d.Body, v.Currency)}
	if eps, err := c.allEndpoints(r, v.OrgID); err == nil {
		for i := range eps {
			if eps[i].ID == d.EndpointID {
				out.Endpoint = &eps[i]
			}
		}
	}
	for k, val := range d.Headers {
		out.Headers = append(out.Headers, header{k, val})
	}
	sortHeaders(out.Headers)
	return out, true
}

func (c *console) receipt(w http.ResponseWriter, r *http.Request) {
	d, ok := c.loadReceipt(w, r)
	if !ok {
		return
	}
	c.renderPage(w, r, http.StatusOK, "receipt", page{Nav: "receipts", Title: "Receipt " + d.Receipt.ID.String(), Data: d})
}

type dryRunData struct {
	receiptData
	Result   integrations.ReplayResult
	Currency string
}

// WouldNotApply says the replay would end anything but applied or
// unchanged: the page warns, and replaying is not its first action.
func (d dryRunData) WouldNotApply() bool { return !wentThrough(d.Result.Outcome) }

// wentThrough says whether a replay's outcome is the post going through.
func wentThrough(o domain.Outcome) bool {
	return o == domain.OutcomeApplied || o == domain.OutcomeUnchanged
}

// dryRun shows what a replay would change, with the button that makes it.
func (c *console) dryRun(w http.ResponseWriter, r *http.Request) {
	d, ok := c.loadReceipt(w, r)
	if !ok {
		return
	}
	v := viewerOf(r.Context())
	res, err := c.Service.ReplayReceipt(r.Context(), v.actor(), v.OrgID, d.Receipt.ID, true)
	if err != nil {
		c.refused(w, r, Prefix+"/receipts/"+d.Receipt.ID.String(), err)
		return
	}
	c.renderPage(w, r, http.StatusOK, "dryrun", page{Nav: "receipts", Title: "Dry run of receipt " + d.Receipt.ID.String(),
		Data: dryRunData{receiptData: d, Result: res, Currency: v.Currency}})
}

func (c *console) replay(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	back := Prefix + "/receipts/" + id.String()
	res, err := c.Service.ReplayReceipt(r.Context(), v.actor(), v.OrgID, id, false)
	if err != nil {
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			c.failErr(w, r, err)
			return
		}
		c.refused(w, r, back, err)
		return
	}
	msg := "Replayed: the new receipt's outcome is " + string(res.Outcome) + " with " + strconv.Itoa(len(res.Changes)) + " change(s)."
	if !wentThrough(res.Outcome) {
		// Never shown as a success.
		msg = "Warning: the replay did not go through: the new receipt's outcome is " + string(res.Outcome) + "."
	}
	if res.Error != nil {
		msg += " " + *res.Error
	}
	c.done(w, r, Prefix+"/receipts/"+res.Receipt.ID.String(), msg)
}

func (c *console) cancel(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	back := Prefix + "/receipts/" + id.String()
	if !c.confirmed(w, r, "Cancel the parked receipt "+id.String()+"? It stops waiting for its record; it can be replayed later.",
		"Cancel this 1 receipt", back) {
		return
	}
	d, err := c.Service.CancelReceipt(r.Context(), v.actor(), v.OrgID, id)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	c.done(w, r, back, "Cancelled: the parked post is now "+string(d.Outcome)+"; it can be replayed later.")
}
