package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/integrations"
)

type endpointsData struct {
	Endpoints []integrations.EndpointItem
	Next      string
	Actions   []domain.Action
	Outcomes  []domain.Outcome
}

// endpointsPage is the organisation's endpoints, newest first, with their
// last day's counts and the form that makes one.
var endpointsPage = listPage[struct{}, integrations.EndpointItem]{
	template: "endpoints",
	rows: func(c *console, r *http.Request, org uuid.UUID, _ struct{}, p db.Page) ([]integrations.EndpointItem, error) {
		return c.Service.Endpoints(r.Context(), org, p)
	},
	key: func(e integrations.EndpointItem) (domain.Timestamp, uuid.UUID) { return e.CreatedAt, e.ID },
	data: func(_ *console, _ *http.Request, _ uuid.UUID, _ struct{}, rows []integrations.EndpointItem, next string) (any, error) {
		return endpointsData{Endpoints: rows, Next: next, Actions: domain.Actions, Outcomes: domain.Outcomes}, nil
	},
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
