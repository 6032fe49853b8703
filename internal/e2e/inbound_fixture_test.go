package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/signature"
)

// inboundFixture is an organisation (owner, admin, every add-on) with
// orders, deliveries and purchase orders to post about, and an API server.
type inboundFixture struct {
	*Env
	srv *httptest.Server
	org domain.Organisation
}

const inboundData = `{
 "customers": [{"company": "Buyer Ltd", "email_domain": "buyer.example"}],
 "quotes": [{"number": "Q-1", "status": "accepted", "customer": "Buyer Ltd", "lines": [{"description": "Bolts", "qty": 10, "unit_price_minor": 100}]}],
 "orders": [
  {"number": "SO-1", "status": "confirmed", "customer": "Buyer Ltd", "customer_po_ref": "CUST-PO-1", "quote_number": "Q-1",
   "lines": [{"description": "Bolts", "qty": 10, "unit_price_minor": 100}]},
  {"number": "SO-2", "status": "confirmed", "customer": "Buyer Ltd", "lines": [{"description": "Nuts", "qty": 5, "unit_price_minor": 50}]},
  {"number": "SO-3", "status": "fulfilled", "lines": [{"description": "Washers", "qty": 1, "unit_price_minor": 20}]}],
 "deliveries": [
  {"number": "DN-1", "status": "pending", "order_number": "SO-2", "consignment_ref": "CON-1"},
  {"number": "DN-2", "status": "pending", "order_number": "SO-2", "consignment_ref": "CON-2"},
  {"number": "DN-3", "status": "ready", "order_number": "SO-1"}],
 "suppliers": [{"name": "Steel Co", "currency": "GBP"}],
 "purchase_orders": [
  {"number": "P-SENT", "supplier": "Steel Co", "status": "sent", "lines": [{"description": "Rod", "qty": 5, "unit_price_minor": 1000}]},
  {"number": "P-REC", "supplier": "Steel Co", "status": "received",
   "lines": [{"description": "Rod", "qty": 10, "unit_price_minor": 1000}, {"description": "Bar", "qty": 4, "unit_price_minor": 2500}],
   "receipts": [{"received_at": "2026-11-10T09:00:00Z", "lines": [{"position": 1, "qty": 10}, {"position": 2, "qty": 4}]}]},
  {"number": "P-NONE", "supplier": "Steel Co", "status": "acknowledged", "lines": [{"description": "Rod", "qty": 3, "unit_price_minor": 1000}]},
  {"number": "P-CANC", "supplier": "Steel Co", "status": "cancelled", "lines": [{"description": "Rod", "qty": 1, "unit_price_minor": 1000}]}]
}`

func newInbound(t *testing.T) *inboundFixture {
	t.Helper()
	return newInboundOn(t, Start(t))
}

// newInboundOn is newInbound over an environment already started.
func newInboundOn(t *testing.T, env *Env) *inboundFixture {
	t.Helper()
	f := &inboundFixture{Env: env, srv: env.API(5 * time.Second)}
	ctx := context.Background()
	org, _, err := env.DB.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	f.org = org
	if _, err := env.DB.AddUser(ctx, org.ID, "admin@acme.example", domain.UserAdmin); err != nil {
		t.Fatal(err)
	}
	f.seed(inboundData)
	for _, a := range domain.Addons {
		if _, err := env.DB.SetAddon(ctx, org.ID, a, true); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *inboundFixture) seed(file string) {
	f.T.Helper()
	sf, err := domain.ParseSeed([]byte(file))
	if err != nil {
		f.T.Fatal(err)
	}
	if _, err := f.DB.Seed(context.Background(), f.org.ID, sf); err != nil {
		f.T.Fatal(err)
	}
}

// endpoint creates an endpoint for action and returns its URL, its id and
// (when signed) its secret.
func (f *inboundFixture) endpoint(action domain.Action, signed bool) (string, string, string) {
	f.T.Helper()
	e, err := f.DB.CreateEndpoint(context.Background(), Sealer(), db.NewEndpoint{OrgID: f.org.ID, AsEmail: "admin@acme.example",
		Name: string(action), Action: action, RequireSignature: signed})
	if err != nil {
		f.T.Fatal(err)
	}
	secret := ""
	if e.Secret != nil {
		secret = *e.Secret
	}
	return cli.InboundURL(f.srv.URL, e.Token), e.ID.String(), secret
}

type answer struct {
	status  int
	header  http.Header
	raw     []byte
	fields  map[string]any
	receipt string
}

func (a answer) str(key string) string {
	s, _ := a.fields[key].(string)
	return s
}

func (a answer) changes() []map[string]any {
	list, _ := a.fields["changes"].([]any)
	out := []map[string]any{}
	for _, c := range list {
		out = append(out, c.(map[string]any))
	}
	return out
}

func (f *inboundFixture) post(url, body string, header ...string) answer {
	f.T.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: raw, receipt: resp.Header.Get("X-Receipt-Id")}
	_ = json.Unmarshal(raw, &a.fields)
	if a.status >= 400 && (len(a.fields) != 1 || a.str("error") == "") {
		f.T.Fatalf("error answer %d is not {\"error\": ...}: %s", a.status, raw)
	}
	return a
}

func (f *inboundFixture) signedPost(url, secret, body string, at time.Time) answer {
	return f.post(url, body, signature.Header, signature.Sign(secret, at, []byte(body)))
}

// receipt reads a receipt back.
func (f *inboundFixture) receipt(id string) db.Receipt {
	f.T.Helper()
	r, err := f.DB.GetReceipt(context.Background(), f.org.ID, mustID(f.T, id))
	if err != nil {
		f.T.Fatal(err)
	}
	return r
}

// eventually polls cond for up to 15 seconds.
func (f *inboundFixture) eventually(what string, cond func() bool) {
	f.T.Helper()
	f.eventuallyWithin(15*time.Second, what, cond)
}

func (f *inboundFixture) eventuallyWithin(d time.Duration, what string, cond func() bool) {
	f.T.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			f.T.Fatalf("%s did not happen within %s", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (f *inboundFixture) one(sql string, args ...any) string {
	f.T.Helper()
	var s *string
	if err := f.DB.Pool().QueryRow(context.Background(), sql, append([]any{f.org.ID}, args...)...).Scan(&s); err != nil {
		f.T.Fatalf("%s: %v", sql, err)
	}
	if s == nil {
		return ""
	}
	return *s
}

func (f *inboundFixture) count(sql string, args ...any) int {
	f.T.Helper()
	var n int
	if err := f.DB.Pool().QueryRow(context.Background(), sql, append([]any{f.org.ID}, args...)...).Scan(&n); err != nil {
		f.T.Fatalf("%s: %v", sql, err)
	}
	return n
}

// column reads one text column of many rows ($1 is the organisation).
func (f *inboundFixture) column(sql string, args ...any) []string {
	f.T.Helper()
	rows, err := f.DB.Pool().Query(context.Background(), sql, append([]any{f.org.ID}, args...)...)
	if err != nil {
		f.T.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		f.T.Fatalf("%s: %v", sql, err)
	}
	return out
}

// exec runs a statement ($1 is the organisation).
func (f *inboundFixture) exec(sql string, args ...any) {
	f.T.Helper()
	if _, err := f.DB.Pool().Exec(context.Background(), sql, append([]any{f.org.ID}, args...)...); err != nil {
		f.T.Fatalf("%s: %v", sql, err)
	}
}
