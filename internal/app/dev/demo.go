package dev

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/examples"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// demoOwner is the demo organisation's owner.
const demoOwner = "owner@demo.example"

// demoOrganisation reuses the organisation and key of dev.json when they are
// still valid, and otherwise creates the demo organisation (owner, every
// add-on, an all-scopes key, the example data).
func demoOrganisation(ctx context.Context, d *db.DB, dir string) (devState, error) {
	if prev, err := readState(dir); err == nil && prev.APIKey != "" {
		if org, err := d.ActiveKeyOrg(ctx, secrets.Hash(prev.APIKey)); err == nil && org.String() == prev.OrgID {
			return prev, nil
		}
	}
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Demo Trading Ltd", Currency: "GBP", OwnerEmail: demoOwner})
	if err != nil {
		return devState{}, err
	}
	f, err := domain.ParseSeed(examples.Seed)
	if err != nil {
		return devState{}, err
	}
	if _, err := d.Seed(ctx, org.ID, f); err != nil {
		return devState{}, err
	}
	// After the seed, whose locations name the default one.
	for _, a := range domain.Addons {
		if _, err := d.SetAddon(ctx, org.ID, a, true); err != nil {
			return devState{}, err
		}
	}
	_, key, err := d.CreateAPIKey(ctx, org.ID, "commerce dev", domain.AllScopes)
	if err != nil {
		return devState{}, err
	}
	return devState{APIKey: key, OrgID: org.ID.String()}, nil
}

// demoEndpoints keeps one unsigned inbound endpoint per action for the demo
// organisation: those of dev.json that still work, and new ones for the
// rest.
func demoEndpoints(ctx context.Context, d *db.DB, s devState) (map[domain.Action]string, error) {
	orgID, err := uuid.Parse(s.OrgID)
	if err != nil {
		return nil, err
	}
	tokens := map[domain.Action]string{}
	for _, action := range domain.Actions {
		if token := s.InboundTokens[action]; token != "" {
			if e, err := d.EndpointByToken(ctx, secrets.Hash(token)); err == nil && e.OrgID == orgID && e.Action == action {
				tokens[action] = token
				continue
			}
		}
		e, err := d.CreateEndpoint(ctx, nil, db.NewEndpoint{OrgID: orgID, AsEmail: demoOwner, Name: "demo " + string(action), Action: action})
		if err != nil {
			return nil, err
		}
		tokens[action] = e.Token
	}
	return tokens, nil
}

// demoPost is an inbound post the demo organisation receives once, so that
// its receipts show more than success: ref, in its body, tells whether it
// was posted already.
type demoPost struct {
	action domain.Action
	ref    string
	body   string
}

// demoPosts are the posts an ERP integration typically gets wrong or early:
// an invoice in another currency than its order's, refused 422 (outcome
// failed), and the status of an order not loaded yet, which parks until
// the order exists (outcome parked; unmatched after 7 days).
var demoPosts = []demoPost{
	{domain.ActionOrderInvoice, "INV-40117",
		`{"order_ref": "SO-2026-0201", "invoice_ref": "INV-40117", "invoice_status": "issued", "amount_minor": 58500, "currency": "EUR"}`},
	{domain.ActionERPOrderStatus, "SO-2026-0250",
		`{"order_ref": "SO-2026-0250", "status": "processing"}`},
}

// postDemoReceipts posts demoPosts through the service's handler, as a
// sender would, to the demo organisation's inbound endpoints: each only when
// its endpoint has no receipt naming its ref yet, so a restart adds none.
func postDemoReceipts(ctx context.Context, d *db.DB, handler http.Handler, s devState) error {
	orgID, err := uuid.Parse(s.OrgID)
	if err != nil {
		return err
	}
	for _, p := range demoPosts {
		token := s.InboundTokens[p.action]
		e, err := d.EndpointByToken(ctx, secrets.Hash(token))
		if err != nil {
			return fmt.Errorf("demo %s endpoint: %w", p.action, err)
		}
		seen, err := d.ListOrgReceipts(ctx, orgID, db.OrgReceiptFilter{EndpointID: &e.ID, Ref: p.ref}, db.Page{Limit: 1})
		if err != nil {
			return err
		}
		if len(seen) > 0 {
			continue
		}
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/in/"+token, strings.NewReader(p.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "commerce dev (demo data)")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Header().Get("X-Receipt-Id") == "" {
			return fmt.Errorf("demo %s post kept no receipt: %d %s", p.action, rec.Code, rec.Body)
		}
	}
	return nil
}
