package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

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
	in := db.NewReplayBatch{OrgID: orgID, DryRun: form.Get("dry_run") != "", Ref: strings.TrimSpace(form.Get("ref")),
		IncludeResolved: form.Get("include_resolved") != ""}
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
	endpoint := ""
	if r.PostForm.Get("confirm") != "yes" {
		eps, err := c.allEndpoints(r, v.OrgID)
		if err != nil {
			c.failErr(w, r, err)
			return
		}
		for _, e := range eps {
			if in.EndpointID != nil && e.ID == *in.EndpointID {
				endpoint = e.Name
			}
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
			c.refused(w, r, back, domain.Errorf(domain.EINVALID, "no receipt matches these filters (%s)", describeSelection(in, endpoint)))
			return
		}
	}
	count := 0
	if sel != nil {
		count = sel.Count
	}
	if !c.confirmedShowing(w, r, what+" the "+strconv.Itoa(count)+" receipt(s) these filters select ("+describeSelection(in, endpoint)+")?",
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

// describeSelection names a bulk replay's filters in words, its endpoint
// by endpointName (by its id when that is "").
func describeSelection(in db.NewReplayBatch, endpointName string) string {
	outcomes := make([]string, len(in.Outcomes))
	for i, o := range in.Outcomes {
		outcomes[i] = string(o)
	}
	parts := []string{"outcome " + strings.Join(outcomes, " or ")}
	if in.EndpointID != nil {
		name := endpointName
		if name == "" {
			name = in.EndpointID.String()
		}
		parts = append(parts, "endpoint "+strconv.Quote(clip(100, name)))
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
