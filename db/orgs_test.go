package db_test

import (
	"context"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

func TestCreateOrganisationWithOwner(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, owner, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme Ltd", Currency: "EUR", OwnerEmail: "Boss@Acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	if org.Currency != "EUR" || org.ProductCap != 100000 || org.Stock || org.Route || org.Source {
		t.Fatalf("organisation = %+v", org)
	}
	if owner == nil || owner.Email != "boss@acme.example" || owner.Role != domain.UserOwner || owner.OrgID != org.ID {
		t.Fatalf("owner = %+v", owner)
	}
	if _, err := d.AddUser(ctx, org.ID, "other@acme.example", domain.UserOwner); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("second owner: %v, want ECONFLICT", err)
	}
	if _, err := d.AddUser(ctx, org.ID, "BOSS@acme.example", domain.UserAdmin); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("duplicate email: %v, want ECONFLICT", err)
	}
	if _, err := d.AddUser(ctx, org.ID, "not-an-email", domain.UserAdmin); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("bad email: %v, want EINVALID", err)
	}
	if _, err := d.AddUser(ctx, db.NewID(), "a@b.example", domain.UserAdmin); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("unknown org: %v, want ENOTFOUND", err)
	}
	for _, bad := range []db.NewOrganisation{{Name: ""}, {Name: "X", Currency: "eur"}} {
		if _, _, err := d.CreateOrganisation(ctx, bad); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("CreateOrganisation(%+v) = %v, want EINVALID", bad, err)
		}
	}
}

// The default location takes the code MAIN, or the first free one of
// MAIN-2, MAIN-3, ... when locations the organisation made hold it; those
// stay as they were.
func TestDefaultLocationTakesAFreeCodeWhenMAINIsTaken(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	for _, c := range []struct {
		taken []string
		want  string
	}{
		{nil, "MAIN"},
		{[]string{"MAIN"}, "MAIN-2"},
		{[]string{"MAIN", "MAIN-2"}, "MAIN-3"},
		{[]string{"MAIN", "MAIN-3"}, "MAIN-2"},
		{[]string{"MAIN-2", "main"}, "MAIN"},
	} {
		org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme " + c.want + strings.Join(c.taken, ",")})
		for _, code := range c.taken {
			if _, err := d.Pool().Exec(ctx, `INSERT INTO stock_locations (id, org_id, code, name) VALUES ($1, $2, $3, 'Elsewhere')`,
				db.NewID(), org.ID, code); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := d.SetAddon(ctx, org.ID, domain.AddonStock, true); err != nil {
			t.Fatalf("taken %v: %v", c.taken, err)
		}
		locations, err := d.StockLocations(ctx, org.ID)
		if err != nil || len(locations) != len(c.taken)+1 {
			t.Fatalf("taken %v: %+v, %v", c.taken, locations, err)
		}
		if l := locations[0]; !l.IsDefault || l.Code != c.want || l.Name != "Main warehouse" {
			t.Errorf("taken %v: default %+v, want code %s", c.taken, l, c.want)
		}
		for _, l := range locations[1:] {
			if l.IsDefault || l.Name != "Elsewhere" {
				t.Errorf("taken %v: location %+v changed", c.taken, l)
			}
		}
	}
}

func TestStockAddonCreatesDefaultLocationOnce(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	for _, on := range []bool{true, false, true} {
		o, err := d.SetAddon(ctx, org.ID, domain.AddonStock, on)
		if err != nil || o.Stock != on {
			t.Fatalf("SetAddon(stock, %v) = %+v, %v", on, o, err)
		}
	}
	var n int
	_ = d.Pool().QueryRow(ctx, `SELECT count(*) FROM stock_locations WHERE org_id = $1 AND is_default`, org.ID).Scan(&n)
	if n != 1 {
		t.Fatalf("%d default locations, want 1", n)
	}
	if _, err := d.SetAddon(ctx, org.ID, "warp", true); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("unknown add-on: %v", err)
	}
}

func TestAPIKeyLifecycle(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	key, plain, err := d.CreateAPIKey(ctx, org.ID, "erp", []domain.Scope{domain.ScopeProductsRead})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := d.AuthenticateKey(ctx, secrets.Hash(plain), "")
	if err != nil {
		t.Fatalf("fresh key rejected: %v", err)
	}
	if auth.Principal.KeyID != key.ID || auth.Principal.OrgID != org.ID || !auth.Principal.Has(domain.ScopeProductsRead) ||
		auth.Principal.Has(domain.ScopeProductsWrite) || !auth.Rate.Allowed {
		t.Fatalf("auth = %+v", auth)
	}
	keys, err := d.ListAPIKeys(ctx, org.ID)
	if err != nil || len(keys) != 1 || keys[0].LastUsedAt == nil || keys[0].Prefix != plain[:9] {
		t.Fatalf("ListAPIKeys = %+v, %v; want one key with last_used_at set", keys, err)
	}
	if _, err := d.AuthenticateKey(ctx, secrets.Hash(plain+"x"), ""); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
		t.Fatalf("unknown key: %v, want EUNAUTHORIZED", err)
	}
	revoked, err := d.RevokeAPIKey(ctx, org.ID, key.ID)
	if err != nil || revoked.RevokedAt == nil {
		t.Fatalf("revoke = %+v, %v", revoked, err)
	}
	if _, err := d.AuthenticateKey(ctx, secrets.Hash(plain), ""); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
		t.Fatalf("revoked key: %v, want EUNAUTHORIZED", err)
	}
	if _, err := d.RevokeAPIKey(ctx, org.ID, db.NewID()); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("revoke unknown key: %v, want ENOTFOUND", err)
	}
}

func TestNoPlaintextKeyIsStored(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	_, plain, err := d.CreateAPIKey(ctx, org.ID, "erp", domain.AllScopes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.AuthenticateKey(ctx, secrets.Hash(plain), ""); err != nil {
		t.Fatal(err)
	}
	// Every column of every table, as text, must be free of the key's
	// secret part.
	for _, table := range schemaTables(t, d) {
		var hits int
		err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM `+table+` x WHERE x::text LIKE '%' || $1 || '%'`, plain[9:]).Scan(&hits)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if hits > 0 {
			t.Errorf("table %s holds the plaintext key", table)
		}
	}
}
