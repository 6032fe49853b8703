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
	// The forms' time zones (formZone) load on a host without tzdata.
	_ "time/tzdata"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/activities"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
	"github.com/commerce-integration/commerce/signature"
)

// perPage is how many rows a list page shows.
const perPage = 50

// pageKey is where a newest-first list continues: the (created_at, id) of
// the last row shown, as "RFC3339Nano_uuid" in the "page" query parameter.
func pageKey(r *http.Request) (db.Page, error) {
	p := db.Page{Limit: perPage + 1}
	raw := r.URL.Query().Get("page")
	if raw == "" {
		return p, nil
	}
	at, id, ok := strings.Cut(raw, "_")
	t, terr := time.Parse(time.RFC3339Nano, at)
	u, uerr := uuid.Parse(id)
	if !ok || terr != nil || uerr != nil {
		return p, domain.Errorf(domain.EINVALID, "the page parameter is not one this console made")
	}
	p.After = &db.Key{At: t, ID: u}
	return p, nil
}

// nextPage trims rows fetched with perPage+1 and returns the link to the
// page after, "" when none follows.
func nextPage[T any](r *http.Request, rows []T, key func(T) (domain.Timestamp, uuid.UUID)) ([]T, string) {
	if len(rows) <= perPage {
		return rows, ""
	}
	rows = rows[:perPage]
	at, id := key(rows[perPage-1])
	q := r.URL.Query()
	q.Set("page", at.Time.UTC().Format(time.RFC3339Nano)+"_"+id.String())
	return rows, r.URL.Path + "?" + q.Encode()
}

func pathID(r *http.Request) (uuid.UUID, error) {
	id, err := uuid.Parse(chi.URLParam(r, "id"))
	if err != nil {
		return id, domain.Errorf(domain.ENOTFOUND, "no such record")
	}
	return id, nil
}

// zoneField is the field (and query parameter) naming the IANA time zone a
// form's times are in: console.js sets it to the viewer's zone, the one
// the page shows times in. Absent, the times are UTC.
const zoneField = "tz"

// formZone reads the zoneField: UTC when absent, otherwise an IANA zone
// (the embedded tzdata has them all, whatever the host has). The server's
// own zone ("Local") is no viewer's.
func formZone(raw string) (*time.Location, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return time.UTC, nil
	}
	if raw != "Local" {
		if loc, err := time.LoadLocation(raw); err == nil {
			return loc, nil
		}
	}
	return nil, domain.Errorf(domain.EINVALID, "The time zone filter %s names no time zone: %s (an IANA name such as Europe/London).",
		strconv.QuoteToASCII(zoneField), strconv.QuoteToASCII(raw))
}

// zoneName is the name a page gives loc (its zoneField value).
func zoneName(loc *time.Location) string {
	if loc == nil {
		return "UTC"
	}
	return loc.String()
}

// formTime reads a datetime-local field as a time in loc (the form's
// zone), or RFC 3339, which keeps its own offset.
func formTime(name, raw string, loc *time.Location) (*time.Time, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.ParseInLocation(layout, raw, loc); err == nil {
			return &t, nil
		}
	}
	return nil, domain.Errorf(domain.EINVALID, "%s is not a date and time (YYYY-MM-DDTHH:MM, in %s)", name, zoneName(loc))
}

// inZone shows t as the minute it is in its own zone, naming the zone: the
// form's zone for a time read by formTime, the offset for RFC 3339.
func inZone(t time.Time) string {
	name := t.Location().String()
	if name == "" {
		name = "UTC" + t.Format("-07:00")
	}
	return t.Format("2006-01-02 15:04") + " " + name
}

// ---- endpoints

type endpointsData struct {
	Endpoints []integrations.EndpointItem
	Next      string
	Actions   []domain.Action
	Outcomes  []domain.Outcome
}

func (c *console) endpoints(w http.ResponseWriter, r *http.Request) {
	p, err := pageKey(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	list, err := c.Service.Endpoints(r.Context(), v.OrgID, p)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	d := endpointsData{Actions: domain.Actions, Outcomes: domain.Outcomes}
	d.Endpoints, d.Next = nextPage(r, list, func(e integrations.EndpointItem) (domain.Timestamp, uuid.UUID) { return e.CreatedAt, e.ID })
	c.render(w, r, http.StatusOK, "endpoints", d)
}

type createdEndpointData struct {
	Endpoint db.Endpoint
	URL      string
	Secret   *string
}

func (c *console) createEndpoint(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	e, err := c.Service.CreateEndpoint(r.Context(), v.actor(), db.NewEndpoint{OrgID: v.OrgID, AsEmail: v.Email,
		Name: r.PostForm.Get("name"), Action: domain.Action(r.PostForm.Get("action")), RequireSignature: r.PostForm.Get("require_signature") != ""})
	if err != nil {
		c.refused(w, r, Prefix+"/", err)
		return
	}
	// Shown this once: the page is not cached, and nothing keeps them.
	c.renderPage(w, r, http.StatusCreated, "endpoint_created", page{Nav: "endpoints",
		Flash: "Endpoint " + e.Name + " created. Copy its URL" + map[bool]string{true: " and secret", false: ""}[e.Secret != nil] +
			" now: they are shown only this once.",
		Data: createdEndpointData{Endpoint: e.Endpoint, URL: strings.TrimSuffix(c.BaseURL, "/") + "/api/in/" + e.Token, Secret: e.Secret}})
}

func (c *console) setEndpointState(to domain.EndpointState) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r)
		if err != nil {
			c.failErr(w, r, err)
			return
		}
		v := viewerOf(r.Context())
		if to == domain.EndpointPaused {
			name := id.String()
			if eps, err := c.allEndpoints(r, v.OrgID); err == nil {
				for _, e := range eps {
					if e.ID == id {
						name = e.Name
					}
				}
			}
			if !c.confirmed(w, r, "Pause the endpoint "+strconv.Quote(name)+"? Every post to it will be answered 409 until it is resumed.",
				"Pause "+name, Prefix+"/") {
				return
			}
		}
		e, err := c.Service.SetEndpointState(r.Context(), v.actor(), v.OrgID, id, to)
		if err != nil {
			c.refused(w, r, Prefix+"/", err)
			return
		}
		verb := map[domain.EndpointState]string{domain.EndpointActive: "resumed: posts are taken again",
			domain.EndpointPaused: "paused: posts answer 409 until it is resumed"}[to]
		c.done(w, r, Prefix+"/", "Endpoint "+e.Name+" "+verb+".")
	}
}

// ---- receipts

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

// ---- bulk replays

type bulkFormData struct {
	// Selection is what the filters the form opened with select.
	Selection *selectionData
	Endpoints []integrations.EndpointItem
	Outcomes  []domain.Outcome
	Filter    url.Values
	Chosen    map[string]bool
	// Zone is the IANA zone of the times (the list's, when opened from it).
	Zone string
}

func (c *console) newBulkReplay(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	q := r.URL.Query()
	loc, err := formZone(q.Get(zoneField))
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	eps, err := c.allEndpoints(r, v.OrgID)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	in, err := bulkSelection(v.OrgID, q)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	chosen := map[string]bool{}
	for _, o := range in.Outcomes {
		chosen[string(o)] = true
	}
	d := bulkFormData{Endpoints: eps, Outcomes: domain.Outcomes, Filter: q, Chosen: chosen, Zone: zoneName(loc)}
	if len(chosen) == 0 {
		chosen["failed"] = true
	} else {
		// Opened with filters (from the receipts list): what they select,
		// before anything starts.
		if d.Selection, err = c.selection(r, in, eps); err != nil {
			c.failErr(w, r, err)
			return
		}
	}
	c.renderPage(w, r, http.StatusOK, "bulk_new", page{Nav: "replays", Data: d})
}

// selectionData is what a bulk replay's filters select: how many receipts
// (up to one more than a batch takes), and the first ten.
type selectionData struct {
	Count     int
	TooMany   bool
	First     []db.Receipt
	Endpoints map[uuid.UUID]string
}

// selectionShown is how many of a bulk replay's receipts are listed before
// it starts.
const selectionShown = 10

func (c *console) selection(r *http.Request, in db.NewReplayBatch, eps []integrations.EndpointItem) (*selectionData, error) {
	n, err := c.DB.CountReplaySelection(r.Context(), in)
	if err != nil {
		return nil, err
	}
	first, err := c.DB.FirstOfReplaySelection(r.Context(), in, selectionShown)
	if err != nil {
		return nil, err
	}
	names := make(map[uuid.UUID]string, len(eps))
	for _, e := range eps {
		names[e.ID] = e.Name
	}
	return &selectionData{Count: min(n, db.MaxReplayBatch), TooMany: n > db.MaxReplayBatch, First: first, Endpoints: names}, nil
}

// bulkSelection reads a bulk replay's filters from a form (or the query
// of the form's page): outcomes, endpoint, the time range in the form's
// zone, and ref.
func bulkSelection(orgID uuid.UUID, form url.Values) (db.NewReplayBatch, error) {
	in := db.NewReplayBatch{OrgID: orgID, DryRun: form.Get("dry_run") != "", Ref: strings.TrimSpace(form.Get("ref"))}
	var err error
	if in.Outcomes, err = domain.ParseOutcomes(strings.Join(form["outcome"], ",")); err != nil {
		return in, err
	}
	if raw := form.Get("endpoint"); raw != "" {
		id, perr := uuid.Parse(raw)
		if perr != nil {
			return in, domain.Errorf(domain.EINVALID, "the endpoint names no endpoint")
		}
		in.EndpointID = &id
	}
	loc, err := formZone(form.Get(zoneField))
	if err != nil {
		return in, err
	}
	if in.ReceivedAfter, err = formTime("From", form.Get("after"), loc); err != nil {
		return in, err
	}
	in.ReceivedBefore, err = formTime("To", form.Get("before"), loc)
	return in, err
}

func (c *console) startBulkReplay(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	back := Prefix + "/replays/new"
	in, err := bulkSelection(v.OrgID, r.PostForm)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	what := "Replay"
	if in.DryRun {
		what = "Dry-run the replay of"
	}
	var sel *selectionData
	if r.PostForm.Get("confirm") != "yes" {
		eps, err := c.allEndpoints(r, v.OrgID)
		if err != nil {
			c.failErr(w, r, err)
			return
		}
		if sel, err = c.selection(r, in, eps); err != nil {
			c.refused(w, r, back, err)
			return
		}
		if sel.TooMany {
			c.refused(w, r, back, domain.Errorf(domain.EINVALID, "more than %d receipts match: narrow the filters", db.MaxReplayBatch))
			return
		}
		if sel.Count == 0 {
			c.refused(w, r, back, domain.Errorf(domain.EINVALID, "no receipt matches these filters (%s)", describeSelection(in)))
			return
		}
	}
	count := 0
	if sel != nil {
		count = sel.Count
	}
	if !c.confirmedShowing(w, r, what+" the "+strconv.Itoa(count)+" receipt(s) these filters select ("+describeSelection(in)+")?",
		what+" "+strconv.Itoa(count)+" receipt(s)", back, sel) {
		return
	}
	b, err := c.Service.StartBulkReplay(r.Context(), v.actor(), in)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	kind := "Bulk replay"
	if b.DryRun {
		kind = "Bulk dry run"
	}
	c.done(w, r, Prefix+"/replays/"+b.ID.String(), kind+" started over "+strconv.Itoa(b.Total)+" receipt(s).")
}

// describeSelection names a bulk replay's filters in words.
func describeSelection(in db.NewReplayBatch) string {
	outcomes := make([]string, len(in.Outcomes))
	for i, o := range in.Outcomes {
		outcomes[i] = string(o)
	}
	parts := []string{"outcome " + strings.Join(outcomes, " or ")}
	if in.EndpointID != nil {
		parts = append(parts, "endpoint "+in.EndpointID.String())
	}
	if in.ReceivedAfter != nil {
		parts = append(parts, "received from "+inZone(*in.ReceivedAfter))
	}
	if in.ReceivedBefore != nil {
		parts = append(parts, "received until "+inZone(*in.ReceivedBefore))
	}
	if in.Ref != "" {
		parts = append(parts, "reference or id "+strconv.Quote(in.Ref))
	}
	return strings.Join(parts, ", ")
}

type bulkData struct {
	Batch db.ReplayBatch
}

// bulkReplay shows a bulk replay's progress; while it runs, the page
// reloads itself every two seconds (a meta refresh: no script needed).
func (c *console) bulkReplay(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	b, err := c.DB.GetReplayBatch(r.Context(), v.OrgID, id)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	p := page{Nav: "replays", Title: "Bulk replay " + b.ID.String(), Data: bulkData{Batch: b}}
	if b.Status == "running" {
		p.Refresh = 2
	}
	c.renderPage(w, r, http.StatusOK, "bulk", p)
}

func (c *console) stopBulkReplay(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	back := Prefix + "/replays/" + id.String()
	if _, err := c.Service.StopBulkReplay(r.Context(), v.actor(), v.OrgID, id); err != nil {
		c.refused(w, r, back, err)
		return
	}
	c.done(w, r, back, "Stopped: the receipts under way finish; the others are left as they are.")
}

// ---- webhooks

type subscriptionsData struct {
	Subscriptions []db.Subscription
	Next          string
	EventTypes    []string
	// Since is the recovery form's default, a day ago in Zone (UTC; the
	// script turns it into the viewer's zone with the zoneField).
	Since string
	Zone  string
}

func (c *console) subscriptions(w http.ResponseWriter, r *http.Request) {
	p, err := pageKey(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	list, err := c.DB.ListSubscriptionsPage(r.Context(), v.OrgID, p)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	d := subscriptionsData{EventTypes: domain.EventTypes, Since: now().UTC().Add(-24 * time.Hour).Format("2006-01-02T15:04"), Zone: "UTC"}
	d.Subscriptions, d.Next = nextPage(r, list, func(x db.Subscription) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID })
	c.render(w, r, http.StatusOK, "webhooks", d)
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
		target := id.String()
		if sub, err := c.DB.GetSubscription(r.Context(), v.OrgID, id); err == nil {
			target = sub.URL
		}
		if !c.confirmed(w, r, "Switch off the subscription to "+target+"? No new deliveries will be made to it until it is switched on.",
			"Switch off", Prefix+"/webhooks") {
			return
		}
	}
	s, err := c.Service.UpdateSubscription(r.Context(), v.actor(), v.OrgID, id, db.SubscriptionChange{Active: &active})
	if err != nil {
		c.refused(w, r, Prefix+"/webhooks", err)
		return
	}
	msg := "Subscription to " + s.URL + " switched off: no new deliveries."
	if s.Active {
		msg = "Subscription to " + s.URL + " switched on."
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
	c.done(w, r, Prefix+"/webhooks", "Delivery settings of the subscription to "+s.URL+" saved: "+settingsText(s.SubscriptionSettings)+".")
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
	target := id.String()
	if sub, err := c.DB.GetSubscription(r.Context(), v.OrgID, id); err == nil {
		target = sub.URL
	}
	if !c.confirmed(w, r, "Send again the "+strconv.Itoa(len(due))+" failed or exhausted deliveries to "+target+" made since "+
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
}

func (c *console) deliveries(w http.ResponseWriter, r *http.Request) {
	v := viewerOf(r.Context())
	q := r.URL.Query()
	f := db.DeliveryListFilter{Status: domain.WebhookStatus(q.Get("status")), EventType: strings.TrimSpace(q.Get("event_type"))}
	statuses := domain.WebhookStatuses
	if f.Status != "" && !slices.Contains(statuses, f.Status) {
		c.fail(w, r, http.StatusBadRequest, "The status filter names a status that does not exist: "+strconv.QuoteToASCII(string(f.Status))+
			" (one of "+domain.JoinValues(statuses)+").")
		return
	}
	if raw := q.Get("subscription"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			c.fail(w, r, http.StatusBadRequest, "The subscription filter names no subscription.")
			return
		}
		f.SubscriptionID = &id
	}
	if raw := q.Get("event"); raw != "" {
		id, err := uuid.Parse(raw)
		if err != nil {
			c.fail(w, r, http.StatusBadRequest, "The event filter names no event: "+strconv.QuoteToASCII(raw)+" is not an event id.")
			return
		}
		f.EventID = &id
	}
	p, err := pageKey(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	list, err := c.DB.ListWebhookDeliveriesPage(r.Context(), v.OrgID, f, p)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	subs, err := c.DB.ListSubscriptions(r.Context(), v.OrgID)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	d := deliveriesData{Filter: q, Statuses: statuses, Subscriptions: subs}
	d.Deliveries, d.Next = nextPage(r, list, func(x db.WebhookDelivery) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID })
	c.render(w, r, http.StatusOK, "deliveries", d)
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
		{activities.HeaderEventID, e.ID.String()},
		{activities.HeaderEventType, e.Type},
		{activities.HeaderDeliveryID, x.ID.String()},
		{activities.HeaderAttempt, "the attempt's number"},
		{signature.HeaderWebhookID, e.ID.String()},
		{signature.HeaderWebhookTimestamp, "the attempt's time, in seconds"},
		{signature.HeaderWebhookSignature, "v1,*** (one per signing secret)"},
		{signature.Header, "t=<the attempt's time>,v1=*** (one per signing secret)"},
	}
	if d.Receipt, err = c.DB.EventReceipt(r.Context(), v.OrgID, x.EventID); err != nil {
		c.failErr(w, r, err)
		return
	}
	c.renderPage(w, r, http.StatusOK, "delivery", page{Nav: "deliveries", Title: "Delivery " + x.ID.String(), Data: d})
}

// deliveryData is a delivery's page: the delivery with its attempts, what
// each attempt sends, and the receipt whose effect emitted its event.
type deliveryData struct {
	db.WebhookDelivery
	Body    string
	Headers [][2]string
	Receipt *uuid.UUID
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

// ---- audit log

type auditData struct {
	Entries []db.AuditEntry
	Next    string
}

func (c *console) audit(w http.ResponseWriter, r *http.Request) {
	p, err := pageKey(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	list, err := c.DB.ListAudit(r.Context(), v.OrgID, p)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	var d auditData
	d.Entries, d.Next = nextPage(r, list, func(x db.AuditEntry) (domain.Timestamp, uuid.UUID) { return x.CreatedAt, x.ID })
	c.render(w, r, http.StatusOK, "audit", d)
}
