package console

import (
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

// receiptsFilter is what the receipts page is filtered by: the list's
// filter, the outcomes chosen (as given, and the known ones in their
// order) and the zone its times are in.
type receiptsFilter struct {
	db.OrgReceiptFilter
	chosen map[string]bool
	names  []string
	loc    *time.Location
}

// receiptsPage is the organisation's receipts, newest first, filtered by
// endpoint, outcomes, time and reference, with the link to a bulk replay of
// what the filters select.
var receiptsPage = listPage[receiptsFilter, integrations.ReceiptSummary]{
	template: "receipts",
	filter:   readReceiptsFilter,
	rows: func(c *console, r *http.Request, org uuid.UUID, f receiptsFilter, p db.Page) ([]integrations.ReceiptSummary, error) {
		return c.Service.ListReceipts(r.Context(), org, f.OrgReceiptFilter, p)
	},
	key:  func(x integrations.ReceiptSummary) (domain.Timestamp, uuid.UUID) { return x.ReceivedAt, x.ID },
	data: receiptsPageData,
}

// readReceiptsFilter reads the receipts page's filters.
func readReceiptsFilter(r *http.Request) (receiptsFilter, error) {
	q := r.URL.Query()
	f := receiptsFilter{OrgReceiptFilter: db.OrgReceiptFilter{Ref: strings.TrimSpace(q.Get("ref"))}, chosen: map[string]bool{}}
	var err error
	if raw := q.Get("endpoint"); raw != "" {
		id, perr := uuid.Parse(raw)
		if perr != nil {
			return f, badFilter("The endpoint filter names no endpoint: " + strconv.QuoteToASCII(raw) + " is not an endpoint id.")
		}
		f.EndpointID = &id
	}
	for _, o := range q["outcome"] {
		for _, part := range strings.Split(o, ",") {
			if part = strings.TrimSpace(part); part != "" {
				f.chosen[part] = true
			}
		}
	}
	f.names = make([]string, 0, len(f.chosen))
	for _, o := range domain.Outcomes {
		if f.chosen[string(o)] {
			f.names = append(f.names, string(o))
		}
	}
	if len(f.names) != len(f.chosen) {
		var unknown []string
		for o := range f.chosen {
			if !slices.Contains(f.names, o) {
				unknown = append(unknown, strconv.QuoteToASCII(o))
			}
		}
		slices.Sort(unknown)
		return f, badFilter("The outcome filter names an outcome that does not exist: " + strings.Join(unknown, ", ") +
			" (one of " + domain.JoinValues(domain.Outcomes) + ").")
	}
	if f.Outcomes, err = domain.ParseOutcomes(strings.Join(f.names, ",")); err != nil {
		return f, err
	}
	// A list of failures leaves out what a replay or a cancellation
	// resolved, unless asked.
	var def *bool
	if db.FailureOutcomes(f.Outcomes) {
		def = db.Unresolved()
	}
	if f.Resolved, err = db.ParseResolved(q.Get("resolved"), def); err != nil {
		return f, badFilter("The resolved filter is " + strconv.QuoteToASCII(q.Get("resolved")) + ": it takes false, true or any.")
	}
	if f.loc, err = formZone(q.Get(zoneField)); err != nil {
		return f, err
	}
	if f.ReceivedAfter, err = formTime("From", q.Get("after"), f.loc); err != nil {
		return f, err
	}
	if f.ReceivedBefore, err = formTime("To", q.Get("before"), f.loc); err != nil {
		return f, err
	}
	if f.ReceivedAfter != nil && f.ReceivedBefore != nil && f.ReceivedAfter.After(*f.ReceivedBefore) {
		return f, badFilter("From (" + inZone(*f.ReceivedAfter) + ") is later than To (" + inZone(*f.ReceivedBefore) + "): no receipt can match.")
	}
	return f, nil
}

// receiptsPageData is the receipts page: the rows with their endpoints'
// names, the filter's choices, and the bulk replay form's link.
func receiptsPageData(c *console, r *http.Request, org uuid.UUID, f receiptsFilter, rows []integrations.ReceiptSummary, next string) (any, error) {
	eps, err := c.allEndpoints(r, org)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	d := receiptsData{Receipts: rows, Next: next, Endpoints: map[uuid.UUID]integrations.EndpointItem{}, Filter: q, Outcomes: domain.Outcomes,
		Chosen: f.chosen, Zone: zoneName(f.loc)}
	for _, e := range eps {
		d.Endpoints[e.ID] = e
	}
	if f.EndpointID != nil {
		if _, ok := d.Endpoints[*f.EndpointID]; !ok {
			return nil, badFilter("The endpoint filter names no endpoint of this organisation: " + f.EndpointID.String() + ".")
		}
	}
	bulk := url.Values{}
	// The times with their zone: the form selects what the list showed.
	for k, key := range map[string]string{"endpoint": "endpoint", "after": "after", "before": "before", zoneField: zoneField, "ref": "ref"} {
		if s := q.Get(k); s != "" {
			bulk.Set(key, s)
		}
	}
	if len(f.names) > 0 {
		bulk.Set("outcome", strings.Join(f.names, ","))
	}
	if f.Resolved == nil || *f.Resolved {
		// The list shows resolved receipts: the replay takes them too.
		bulk.Set("include_resolved", "1")
	}
	// Built here and passed as a URL: the template would escape a query
	// string put in its href as one value (the form then opened with none
	// of the filters).
	d.BulkURL = template.URL(Prefix + "/replays/new?" + bulk.Encode()) // #nosec G203 -- url.Values.Encode escapes every value
	d.EndpointList = eps
	return d, nil
}

type receiptData struct {
	Receipt  integrations.ReceiptDetail
	Endpoint *integrations.EndpointItem
	Body     string
	// MappedBody is the body the endpoint's mapping made of Body, indented
	// ("" where none ran).
	MappedBody string
	// Versions are the endpoint's mapping versions, newest first: a replay
	// may map the body again with one.
	Versions []integrations.Mapping
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
	out := receiptData{Receipt: d, Body: pretty(d.Body), MappedBody: prettyRaw(d.MappedBody), Answer: pretty(d.Response), Currency: v.Currency,
		Amounts: amounts(d.Body, v.Currency)}
	if out.Versions, err = c.Service.EndpointMappingVersions(r.Context(), v.OrgID, d.EndpointID); err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
		c.failErr(w, r, err)
		return receiptData{}, false
	}
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
	c.renderPage(w, r, http.StatusOK, "receipt", page{Nav: "receipts", Title: postName(d.Receipt.Action, d.Receipt.Refs), Data: d})
}

type dryRunData struct {
	receiptData
	Result   integrations.ReplayResult
	Currency string
	// Choice is the mapping the replay maps the body with, as the form
	// gives it (current, original or a version number); Mapped the body it
	// would make, indented.
	Choice string
	Mapped string
}

// ChoiceText names the mapping choice in words.
func (d dryRunData) ChoiceText() string {
	switch d.Choice {
	case "current":
		return "the current mapping"
	case "original":
		return "the mapping it was received with"
	}
	return "version " + d.Choice
}

// mappingChoice reads a replay form's mapping field: current (the
// default), original, or a version number.
func mappingChoice(r *http.Request) (domain.MappingChoice, error) {
	return domain.ParseMappingChoice(strings.TrimSpace(r.PostForm.Get("mapping")))
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
	back := Prefix + "/receipts/" + d.Receipt.ID.String()
	choice, err := mappingChoice(r)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	res, err := c.Service.ReplayReceipt(r.Context(), v.actor(), v.OrgID, d.Receipt.ID, true, choice)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	c.renderPage(w, r, http.StatusOK, "dryrun", page{Nav: "receipts", Title: "Dry run of receipt " + d.Receipt.ID.String(),
		Data: dryRunData{receiptData: d, Result: res, Currency: v.Currency, Choice: choice.String(), Mapped: prettyRaw(res.MappedBody)}})
}

func (c *console) replay(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	back := Prefix + "/receipts/" + id.String()
	choice, err := mappingChoice(r)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	res, err := c.Service.ReplayReceipt(r.Context(), v.actor(), v.OrgID, id, false, choice)
	if err != nil {
		if domain.ErrorCode(err) == domain.ENOTFOUND {
			c.failErr(w, r, err)
			return
		}
		c.refused(w, r, back, err)
		return
	}
	msg := "Replayed: the new receipt's outcome is " + string(res.Outcome) + " with " + strconv.Itoa(len(res.Changes)) + " change(s)."
	if res.MappingVersion != nil {
		msg = strings.TrimSuffix(msg, ".") + ", its body mapped with version " + strconv.Itoa(*res.MappingVersion) + "."
	}
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
	// The question names the post; one the organisation has not is
	// refused by the cancel below.
	name := "receipt " + id.String()
	if rec, err := c.DB.GetReceipt(r.Context(), v.OrgID, id); err == nil {
		name = postName(rec.Action, rec.Refs) + " received " + rec.ReceivedAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	if !c.confirmed(w, r, "Cancel the parked "+name+"? It stops waiting for its record; it can be replayed later.",
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
