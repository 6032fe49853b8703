package console_test

import (
	"context"
	"strings"
	"testing"

	guuid "github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
)

// The endpoints page says how each endpoint verifies its sender, never
// with its secret.
func TestEndpointsPageSaysHowEachVerifiesItsSender(t *testing.T) {
	f := newFixture(t)
	sealer, _ := secrets.NewSealer(key)
	set, err := f.d.SetEndpointVerification(context.Background(), sealer, f.org.ID, guuid.MustParse(f.endpoint), db.NewVerification{
		Kind: domain.VerifyHMAC, Config: domain.VerificationConfig{HMAC: &domain.HMACConfig{Header: "X-Hub-Signature-256",
			Algorithm: "sha256", Encoding: "hex", Prefix: "sha256="}}})
	if err != nil {
		t.Fatal(err)
	}
	member, _ := f.signIn("member@acme.example")
	status, page := member.get("/console/")
	if status != 200 || !strings.Contains(page, "HMAC in <code>X-Hub-Signature-256</code>") || strings.Contains(page, *set.Secret) {
		t.Fatalf("endpoints page: %d %s", status, page)
	}
}
