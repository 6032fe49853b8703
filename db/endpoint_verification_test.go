package db_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// Migration 022 makes every endpoint there verify as before (service), with
// nothing of a sender's scheme, and the table keeps an hmac or basic
// endpoint from going without its secret.
func TestEndpointsOfAnEarlierReleaseVerifyAsBefore(t *testing.T) {
	ctx := context.Background()
	u, conn, _, ep := olderSchema(t, 21, "erp_order_status")
	if _, err := db.Migrate(ctx, u); err != nil {
		t.Fatal(err)
	}
	var kind, config string
	var sealed []byte
	if err := conn.QueryRow(ctx, `SELECT verification, verification_config::text, verification_secret_sealed FROM inbound_endpoints WHERE id = $1`,
		ep).Scan(&kind, &config, &sealed); err != nil {
		t.Fatal(err)
	}
	if kind != "service" || config != "{}" || sealed != nil {
		t.Fatalf("after the migration: verification %s, config %s, secret %v; want service, {}, none", kind, config, sealed)
	}
	var rules int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conrelid = 'inbound_endpoints'::regclass
		AND pg_get_constraintdef(oid) LIKE '%require_signature%'`).Scan(&rules); err != nil || rules != 1 {
		t.Fatalf("rules on require_signature: %d, %v; want migration 001's replaced by one", rules, err)
	}
	for _, bad := range []string{
		`UPDATE inbound_endpoints SET verification = 'hmac' WHERE id = $1`,
		`UPDATE inbound_endpoints SET verification = 'ldap' WHERE id = $1`,
		`UPDATE inbound_endpoints SET verification_secret_sealed = '\x00' WHERE id = $1`,
		`UPDATE inbound_endpoints SET verification_config = '[]' WHERE id = $1`,
		// A service endpoint that requires a signature has its signing secret, as before.
		`UPDATE inbound_endpoints SET require_signature = true WHERE id = $1`,
	} {
		if _, err := conn.Exec(ctx, bad, ep); err == nil {
			t.Errorf("%s: allowed", bad)
		}
	}
}

// Setting an endpoint's verification makes a secret for hmac and basic,
// shown once and kept only sealed to the endpoint, in a place of its own;
// setting it back to service keeps the signing secret it was made with.
func TestSetEndpointVerification(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	sealer, _ := secrets.NewSealer(bytes.Repeat([]byte{7}, secrets.KeySize))
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Other", OwnerEmail: "owner@other.example"})
	made := func(signed bool) db.CreatedEndpoint {
		e, err := d.CreateEndpoint(ctx, sealer, db.NewEndpoint{OrgID: org.ID, AsEmail: "owner@acme.example", Name: "ERP",
			Action: domain.ActionERPOrderStatus, RequireSignature: signed})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	github := db.NewVerification{Kind: domain.VerifyHMAC, Config: domain.VerificationConfig{HMAC: &domain.HMACConfig{
		Header: "x-hub-signature-256", Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="}}}

	signed := made(true)
	set, err := d.SetEndpointVerification(ctx, sealer, org.ID, signed.ID, github)
	if err != nil || set.Secret == nil || set.Verification != domain.VerifyHMAC || set.VerificationConfig.HMAC.Header != "X-Hub-Signature-256" ||
		!set.RequireSignature {
		t.Fatalf("hmac = %+v, %v", set, err)
	}
	got, err := d.Endpoint(ctx, org.ID, signed.ID)
	if err != nil {
		t.Fatal(err)
	}
	kept, ok := got.SealedVerificationSecret()
	if plain, err := sealer.OpenSealed(kept); !ok || err != nil || plain != *set.Secret || bytes.Contains(kept.Value, []byte(*set.Secret)) {
		t.Fatalf("the kept secret opens to %q, %v (ok %v); want the one answered, sealed", plain, err, ok)
	}
	// Sealed to its own place: copied over the signing secret, it does not open there.
	if _, err := d.Pool().Exec(ctx, `UPDATE inbound_endpoints SET secret_sealed = verification_secret_sealed WHERE id = $1`, signed.ID); err != nil {
		t.Fatal(err)
	}
	copied, _ := d.Endpoint(ctx, org.ID, signed.ID)
	if s, _ := copied.SealedSecret(); func() bool { _, err := sealer.OpenSealed(s); return err == nil }() {
		t.Fatal("the verification secret opens as the signing secret")
	}

	unsigned := made(false)
	for _, c := range []struct {
		ep      db.CreatedEndpoint
		kind    domain.Verification
		cfg     domain.VerificationConfig
		require bool
	}{
		{unsigned, domain.VerifyBasic, domain.VerificationConfig{Username: "erp"}, true},
		{unsigned, domain.VerifyNone, domain.VerificationConfig{}, false},
		{unsigned, domain.VerifyService, domain.VerificationConfig{}, false},
		{made(true), domain.VerifyNone, domain.VerificationConfig{}, false},
		{made(true), domain.VerifyService, domain.VerificationConfig{}, true},
	} {
		set, err := d.SetEndpointVerification(ctx, sealer, org.ID, c.ep.ID, db.NewVerification{Kind: c.kind, Config: c.cfg})
		_, hasSecret := set.SealedVerificationSecret()
		if err != nil || set.Verification != c.kind || set.RequireSignature != c.require || (set.Secret != nil) != c.kind.HasSecret() ||
			hasSecret != c.kind.HasSecret() || set.VerificationConfig != c.cfg {
			t.Fatalf("%s: %+v, %v; want require_signature %v", c.kind, set, err, c.require)
		}
	}
	if s, _ := d.Endpoint(ctx, org.ID, unsigned.ID); s.VerificationConfig.Username != "" {
		t.Fatalf("back to service, the endpoint kept %+v", s.VerificationConfig)
	}

	if _, err := d.SetEndpointVerification(ctx, sealer, other.ID, signed.ID, github); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("another organisation's endpoint: %v, want ENOTFOUND", err)
	}
	if _, err := d.SetEndpointVerification(ctx, sealer, org.ID, signed.ID, db.NewVerification{Kind: domain.VerifyBasic}); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("basic without a username: %v, want EINVALID", err)
	}
	if _, err := d.SetEndpointVerification(ctx, nil, org.ID, signed.ID, github); err == nil {
		t.Fatal("a secret made without a service key")
	}
	if _, err := d.SetEndpointState(ctx, org.ID, signed.ID, domain.EndpointDeleted); err != nil {
		t.Fatal(err)
	}
	if gone, _ := d.Endpoint(ctx, org.ID, signed.ID); func() bool { _, ok := gone.SealedVerificationSecret(); return ok }() {
		t.Fatal("a deleted endpoint keeps its verification secret")
	}
	if _, err := d.SetEndpointVerification(ctx, sealer, org.ID, signed.ID, github); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("a deleted endpoint: %v, want ECONFLICT", err)
	}
}
