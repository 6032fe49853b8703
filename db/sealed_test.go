package db_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// sealedFixture is an organisation with two signed endpoints and two
// subscriptions, each with a delivery.
type sealedFixture struct {
	d          *testdb.DB
	key        []byte
	sealer     *secrets.Sealer
	org        domain.Organisation
	endpoints  [2]db.CreatedEndpoint
	subs       [2]db.CreatedSubscription
	deliveries map[uuid.UUID]uuid.UUID // subscription -> delivery
}

func newSealedFixture(t *testing.T) *sealedFixture {
	t.Helper()
	ctx := context.Background()
	f := &sealedFixture{d: testdb.New(t), key: make([]byte, secrets.KeySize), deliveries: map[uuid.UUID]uuid.UUID{}}
	_, _ = rand.Read(f.key)
	f.sealer, _ = secrets.NewSealer(f.key)
	f.org, _, _ = f.d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	var err error
	for i := range f.endpoints {
		f.endpoints[i], err = f.d.CreateEndpoint(ctx, f.sealer, db.NewEndpoint{OrgID: f.org.ID, AsEmail: "owner@acme.example",
			Name: "ERP", Action: domain.ActionERPOrderStatus, RequireSignature: true})
		if err != nil {
			t.Fatal(err)
		}
		f.subs[i], err = f.d.CreateSubscription(ctx, f.sealer, db.NewSubscription{OrgID: f.org.ID, URL: "https://receiver.example/h"})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.d.UpsertCustomers(ctx, f.org.ID, []domain.CustomerInput{{Company: "A"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.RelayEvents(ctx, 10); err != nil {
		t.Fatal(err)
	}
	refs, err := f.d.UnstartedWebhookDeliveries(ctx, 10)
	if err != nil || len(refs) != 2 {
		t.Fatalf("%d deliveries, %v", len(refs), err)
	}
	for _, r := range refs {
		f.deliveries[r.SubscriptionID] = r.ID
	}
	return f
}

// openEndpoint opens endpoint i's secret as a signed post does.
func (f *sealedFixture) openEndpoint(t *testing.T, i int) (string, error) {
	t.Helper()
	p, err := f.d.PostToEndpoint(context.Background(), secrets.Hash(f.endpoints[i].Token))
	if err != nil {
		t.Fatal(err)
	}
	sealed, ok := p.Endpoint.SealedSecret()
	if !ok {
		t.Fatal("the endpoint keeps no secret")
	}
	return f.sealer.OpenSealed(sealed)
}

// openSubscription opens subscription i's secret as a delivery does.
func (f *sealedFixture) openSubscription(t *testing.T, i int) (string, error) {
	t.Helper()
	target, err := f.d.WebhookTarget(context.Background(), f.org.ID, f.deliveries[f.subs[i].ID])
	if err != nil {
		t.Fatal(err)
	}
	current, _, _ := target.SealedSecrets()
	return f.sealer.OpenSealed(current)
}

// copySealed copies secret_sealed from one row of table to another.
func (f *sealedFixture) copySealed(t *testing.T, table string, from, to uuid.UUID) {
	t.Helper()
	if _, err := f.d.Pool().Exec(context.Background(), `UPDATE `+table+` SET secret_sealed = (SELECT secret_sealed FROM `+table+` WHERE id = $1) WHERE id = $2`, from, to); err != nil {
		t.Fatal(err)
	}
}

// sealUnbound seals plaintext as the service did before secrets were bound
// to their rows: nonce || ciphertext || tag, no associated data.
func sealUnbound(t *testing.T, key []byte, plaintext string) []byte {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce)
	return gcm.Seal(nonce, nonce, []byte(plaintext), nil)
}

func TestSealedSecretCopiedToAnotherRowDoesNotOpen(t *testing.T) {
	f := newSealedFixture(t)
	if got, err := f.openEndpoint(t, 0); err != nil || got != *f.endpoints[0].Secret {
		t.Fatalf("endpoint secret in its own row: %q, %v", got, err)
	}
	if got, err := f.openSubscription(t, 0); err != nil || got != f.subs[0].Secret {
		t.Fatalf("subscription secret in its own row: %q, %v", got, err)
	}
	f.copySealed(t, "inbound_endpoints", f.endpoints[0].ID, f.endpoints[1].ID)
	if got, err := f.openEndpoint(t, 1); err == nil {
		t.Errorf("endpoint 0's sealed secret opened in endpoint 1's row: %q", got)
	}
	f.copySealed(t, "webhook_subscriptions", f.subs[0].ID, f.subs[1].ID)
	if got, err := f.openSubscription(t, 1); err == nil {
		t.Errorf("subscription 0's sealed secret opened in subscription 1's row: %q", got)
	}
	// Across tables: an endpoint's sealed secret in a subscription's row.
	if _, err := f.d.Pool().Exec(context.Background(), `UPDATE webhook_subscriptions SET secret_sealed =
		(SELECT secret_sealed FROM inbound_endpoints WHERE id = $1) WHERE id = $2`, f.endpoints[0].ID, f.subs[0].ID); err != nil {
		t.Fatal(err)
	}
	if got, err := f.openSubscription(t, 0); err == nil {
		t.Errorf("an endpoint's sealed secret opened in a subscription's row: %q", got)
	}
}

// Secrets sealed before binding keep working, and ResealSecrets binds
// them to their rows (once: a second run finds nothing to do), after which
// a copy in another row stops opening. One this key cannot open is left as
// it is and counted.
func TestResealSecretsBindsOlderSecretsToTheirRows(t *testing.T) {
	ctx := context.Background()
	f := newSealedFixture(t)
	endpointSecret, subSecret := *f.endpoints[0].Secret, f.subs[0].Secret
	for _, u := range []struct {
		table string
		id    uuid.UUID
		value []byte
	}{
		{"inbound_endpoints", f.endpoints[0].ID, sealUnbound(t, f.key, endpointSecret)},
		{"webhook_subscriptions", f.subs[0].ID, sealUnbound(t, f.key, subSecret)},
		{"webhook_subscriptions", f.subs[1].ID, sealUnbound(t, make([]byte, secrets.KeySize), "whsec_other")},
	} {
		if _, err := f.d.Pool().Exec(ctx, `UPDATE `+u.table+` SET secret_sealed = $2 WHERE id = $1`, u.id, u.value); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := f.openEndpoint(t, 0); err != nil || got != endpointSecret {
		t.Fatalf("an unbound endpoint secret: %q, %v", got, err)
	}
	if got, err := f.openSubscription(t, 0); err != nil || got != subSecret {
		t.Fatalf("an unbound subscription secret: %q, %v", got, err)
	}
	var unreadable []byte
	_ = f.d.Pool().QueryRow(ctx, `SELECT secret_sealed FROM webhook_subscriptions WHERE id = $1`, f.subs[1].ID).Scan(&unreadable)

	r, err := f.d.ResealSecrets(ctx, f.sealer)
	if err != nil || r.Resealed != 2 || r.Unreadable != 1 {
		t.Fatalf("ResealSecrets = %+v, %v; want 2 resealed, 1 unreadable", r, err)
	}
	if r, err := f.d.ResealSecrets(ctx, f.sealer); err != nil || r.Resealed != 0 || r.Unreadable != 1 {
		t.Fatalf("second ResealSecrets = %+v, %v; want nothing more resealed", r, err)
	}
	var stored []byte
	_ = f.d.Pool().QueryRow(ctx, `SELECT secret_sealed FROM webhook_subscriptions WHERE id = $1`, f.subs[1].ID).Scan(&stored)
	if !bytes.Equal(stored, unreadable) {
		t.Fatal("a secret this key cannot open was changed")
	}
	if got, err := f.openEndpoint(t, 0); err != nil || got != endpointSecret {
		t.Fatalf("resealed endpoint secret: %q, %v", got, err)
	}
	if got, err := f.openSubscription(t, 0); err != nil || got != subSecret {
		t.Fatalf("resealed subscription secret: %q, %v", got, err)
	}
	f.copySealed(t, "inbound_endpoints", f.endpoints[0].ID, f.endpoints[1].ID)
	if got, err := f.openEndpoint(t, 1); err == nil {
		t.Errorf("a resealed secret opened in another row: %q", got)
	}
}
