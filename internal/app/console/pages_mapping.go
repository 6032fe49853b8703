package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

// The mapping editor of an endpoint (/console/endpoints/{id}/mapping): the
// current version's source in a text box, a picker of the endpoint's
// recent receipts, Run (a test run of the text on the picked receipt, with
// the changes its action would make; nothing is stored), Save as a new
// version, End mapping, and the versions. Every part is a plain form.

// pickerReceipts is how many of the endpoint's receipts the picker offers.
const pickerReceipts = 20

// starterSource is the editor's text for an endpoint without a mapping.
const starterSource = `function map(post) {
  // post.body is the body as sent; post.headers and post.received_at are beside it.
  // Return the action's body, or null to ignore the post.
  return post.body;
}
`

type mappingData struct {
	Endpoint integrations.EndpointItem
	// Current is the current version (nil: the endpoint never had one).
	Current  *integrations.Mapping
	Versions []integrations.Mapping
	// Source is the editor's text, and SourceError why it does not compile.
	Source      string
	SourceError *sourceError
	Receipts    []integrations.ReceiptSummary
	// Picked is the receipt the picker has chosen (uuid.Nil: none).
	Picked   uuid.UUID
	Run      *mappingRun
	Currency string
}

// sourceError is a source that does not compile, and where: Line and Column
// are 1-based, zero when the message names no place.
type sourceError struct {
	Message      string
	Line, Column int
}

// placeRe finds the "(line L:C)" a script's error ends with.
var placeRe = regexp.MustCompile(`\s*\(line (\d+):(\d+)\)$`)

func newSourceError(msg string) *sourceError {
	e := &sourceError{Message: msg}
	if m := placeRe.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Column, _ = strconv.Atoi(m[2])
		e.Message = strings.TrimSuffix(msg, m[0])
	}
	return e
}

// compileError says whether err is a source's failure to compile.
func compileError(err error) bool {
	return domain.ErrorCode(err) == domain.EINVALID && strings.HasPrefix(domain.ErrorMessage(err), "source does not compile")
}

// mappingRun is a test run on the picked receipt: what ran, the body as
// sent, and what the run made.
type mappingRun struct {
	// Of names what ran: the editor's text or the current version.
	Of      string
	Receipt integrations.ReceiptSummary
	// Sent is the body as sent, indented ("" when it is not JSON), and
	// Complete whether all of it was kept.
	Sent     string
	Complete bool
	// Ran says the mapping ran: the source compiled and the receipt could
	// be mapped. Problem, when it did not, says why.
	Ran     bool
	Problem string
	Result  integrations.MappingTestResult
	Mapped  string
}

// MappingError is why the mapping failed ("" when it did not, or when the
// error is its action's).
func (m mappingRun) MappingError() string {
	if m.Result.Error == nil || m.Result.Outcome != nil {
		return ""
	}
	return *m.Result.Error
}

// ActionError is why the mapped body's action would fail.
func (m mappingRun) ActionError() string {
	if m.Result.Error == nil || m.Result.Outcome == nil {
		return ""
	}
	return *m.Result.Error
}

// editorState is what a request asks of the editor: its text (nil: the
// current version's), the receipt picked ("": the default), whether to
// run, and the refusal of a save.
type editorState struct {
	source  *string
	receipt string
	run     bool
	refused error
}

func mappingPath(endpoint, receipt uuid.UUID) string {
	p := Prefix + "/endpoints/" + endpoint.String() + "/mapping"
	if receipt != uuid.Nil {
		p += "?receipt=" + receipt.String()
	}
	return p
}

// endpointItem is one of the organisation's endpoints (ENOTFOUND when
// none has that id).
func (c *console) endpointItem(r *http.Request, org, id uuid.UUID) (integrations.EndpointItem, error) {
	eps, err := c.allEndpoints(r, org)
	if err != nil {
		return integrations.EndpointItem{}, err
	}
	for _, e := range eps {
		if e.ID == id {
			return e, nil
		}
	}
	return integrations.EndpointItem{}, domain.Errorf(domain.ENOTFOUND, "no such endpoint")
}

// editorText is the editor's field as the service takes it: a browser
// sends a text box's lines ended CRLF.
func editorText(r *http.Request) string {
	return strings.ReplaceAll(r.PostForm.Get(sourceField), "\r\n", "\n")
}

func (c *console) mappingPage(w http.ResponseWriter, r *http.Request) {
	c.showMapping(w, r, http.StatusOK, editorState{receipt: r.URL.Query().Get("receipt"), run: true})
}

// runMapping runs the editor's text on the picked receipt.
func (c *console) runMapping(w http.ResponseWriter, r *http.Request) {
	src := editorText(r)
	c.showMapping(w, r, http.StatusOK, editorState{source: &src, receipt: r.PostForm.Get("receipt"), run: true})
}

// saveMapping makes the editor's text the endpoint's next version; a text
// that does not compile is shown again, with where.
func (c *console) saveMapping(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	src := editorText(r)
	state := editorState{source: &src, receipt: r.PostForm.Get("receipt")}
	if strings.TrimSpace(src) == "" {
		state.refused = domain.Errorf(domain.EINVALID, "The source is empty: to take the endpoint's posts as sent, end the mapping instead.")
		c.showMapping(w, r, http.StatusBadRequest, state)
		return
	}
	m, err := c.Service.SetEndpointMapping(r.Context(), v.actor(), v.OrgID, id, src)
	if domain.ErrorCode(err) == domain.EINVALID {
		state.refused = err
		c.showMapping(w, r, http.StatusBadRequest, state)
		return
	}
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	picked, _ := uuid.Parse(state.receipt)
	c.done(w, r, mappingPath(id, picked), "Saved as version "+strconv.Itoa(m.Version)+
		": the endpoint's posts are mapped with it from the next one on.")
}

// endMapping ends the endpoint's mapping, once confirmed.
func (c *console) endMapping(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	e, err := c.endpointItem(r, v.OrgID, id)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	back := mappingPath(id, uuid.Nil)
	if !c.confirmed(w, r, "End the mapping of the endpoint "+strconv.Quote(e.Name)+"? From its next post on, posts are taken as sent "+
		"(a new version without source; the versions are kept, and a replay may still choose one).", "End mapping", back) {
		return
	}
	m, err := c.Service.EndEndpointMapping(r.Context(), v.actor(), v.OrgID, id)
	if err != nil {
		c.refused(w, r, back, err)
		return
	}
	c.done(w, r, back, "Mapping ended with version "+strconv.Itoa(m.Version)+": the endpoint's posts are taken as sent.")
}

// showMapping answers the editor's page: the endpoint, its versions, the
// picker and, when asked and there is something to run, the run.
func (c *console) showMapping(w http.ResponseWriter, r *http.Request, status int, st editorState) {
	id, err := pathID(r)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	v := viewerOf(r.Context())
	d, err := c.loadMapping(r, v.OrgID, id, st)
	if err != nil {
		c.failErr(w, r, err)
		return
	}
	if st.refused != nil {
		d.SourceError = newSourceError(domain.ErrorMessage(st.refused))
	}
	if st.run && d.Picked != uuid.Nil && (st.source != nil || (d.Current != nil && d.Current.Source != nil)) {
		if err := c.runOn(r, v.OrgID, &d, st.source); err != nil {
			c.failErr(w, r, err)
			return
		}
	}
	c.renderPage(w, r, status, "mapping", page{Nav: "endpoints", Title: "Mapping of " + d.Endpoint.Name, Data: d})
}

// loadMapping reads what the editor shows of endpoint id.
func (c *console) loadMapping(r *http.Request, org, id uuid.UUID, st editorState) (mappingData, error) {
	ctx := r.Context()
	e, err := c.endpointItem(r, org, id)
	if err != nil {
		return mappingData{}, err
	}
	d := mappingData{Endpoint: e, Currency: viewerOf(ctx).Currency, Source: starterSource}
	cur, err := c.Service.EndpointMapping(ctx, org, id)
	switch {
	case err == nil:
		d.Current = &cur
		if cur.Source != nil {
			d.Source = *cur.Source
		}
	case domain.ErrorCode(err) != domain.ENOTFOUND:
		return d, err
	}
	if st.source != nil {
		d.Source = *st.source
	}
	if d.Versions, err = c.Service.EndpointMappingVersions(ctx, org, id); err != nil {
		return d, err
	}
	if d.Receipts, err = c.Service.ListReceipts(ctx, org, db.OrgReceiptFilter{EndpointID: &id}, db.Page{Limit: pickerReceipts}); err != nil {
		return d, err
	}
	return d, c.pick(r, org, &d, st.receipt)
}

// pick chooses the picker's receipt: the one asked for (added to the list
// when it is older than the ones shown), or the newest that failed, or
// the newest.
func (c *console) pick(r *http.Request, org uuid.UUID, d *mappingData, asked string) error {
	if asked == "" {
		for _, x := range d.Receipts {
			if x.Outcome == domain.OutcomeFailed {
				d.Picked = x.ID
				return nil
			}
		}
		if len(d.Receipts) > 0 {
			d.Picked = d.Receipts[0].ID
		}
		return nil
	}
	notFound := domain.Errorf(domain.ENOTFOUND, "endpoint %s has no such receipt", d.Endpoint.Name)
	id, err := uuid.Parse(asked)
	if err != nil {
		return notFound
	}
	d.Picked = id
	for _, x := range d.Receipts {
		if x.ID == id {
			return nil
		}
	}
	x, err := c.Service.Receipt(r.Context(), org, id)
	if domain.ErrorCode(err) == domain.ENOTFOUND || (err == nil && x.EndpointID != d.Endpoint.ID) {
		return notFound
	}
	if err != nil {
		return err
	}
	d.Receipts = append([]integrations.ReceiptSummary{x.ReceiptSummary}, d.Receipts...)
	return nil
}

// runOn runs source (nil: the current version) on the picked receipt, as
// a dry run of its action. A source that does not compile is the editor's
// error; a receipt that cannot be mapped is the run's problem.
func (c *console) runOn(r *http.Request, org uuid.UUID, d *mappingData, source *string) error {
	ctx := r.Context()
	x, err := c.Service.Receipt(ctx, org, d.Picked)
	if err != nil {
		return err
	}
	run := &mappingRun{Of: "the text in the editor", Receipt: x.ReceiptSummary, Sent: pretty(x.Body), Complete: x.BodyComplete}
	if source == nil {
		run.Of = "version " + strconv.Itoa(d.Current.Version) + " (the current one)"
	}
	d.Run = run
	res, err := c.Service.TestEndpointMapping(ctx, org, d.Endpoint.ID, integrations.MappingTest{Source: source, ReceiptID: &d.Picked, DryRun: true})
	switch {
	case err == nil:
		run.Ran, run.Result, run.Mapped = true, res, prettyRaw(res.MappedBody)
	case compileError(err):
		d.SourceError = newSourceError(domain.ErrorMessage(err))
		run.Problem = "The source does not compile: see the error beside the editor."
	case domain.ErrorCode(err) == domain.EINTERNAL:
		return err
	default:
		run.Problem = domain.ErrorMessage(err)
	}
	return nil
}

// prettyRaw indents a JSON text; "" for none.
func prettyRaw(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
