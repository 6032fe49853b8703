package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// keeping calls the key through p until p keeps it, which it does once its
// connection listens for changes.
func (f *leaseFixture) keeping(p *db.DB, addon domain.Addon) db.KeyAuth {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		a, err := p.AuthenticateKey(context.Background(), secrets.Hash(f.plain), addon)
		if err != nil {
			f.t.Fatal(err)
		}
		if n, _ := db.KeysKept(p); n == 1 {
			return a
		}
		if time.Now().After(deadline) {
			f.t.Fatal("the key is not kept 10 s on")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// seenWithin calls the key through p until ok says its answer is the
// changed one, failing the test if that takes over 10 s.
func (f *leaseFixture) seenWithin(p *db.DB, addon domain.Addon, ok func(db.KeyAuth, error) bool) {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ok(p.AuthenticateKey(context.Background(), secrets.Hash(f.plain), addon)) {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatal("the change is not seen 10 s on")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAKeyRevokedThroughAnotherProcessIsRefusedOnTheTriggersNotice(t *testing.T) {
	ctx := context.Background()
	f := newLeaseFixture(t)
	p := f.process()
	db.SetKeyCacheTTL(p, time.Hour) // only a notice can drop what p keeps
	f.keeping(p, "")

	// Revoked behind the trigger's back, the key is still served from what
	// p kept: calls read nothing.
	if _, err := f.d.Pool().Exec(ctx, `
		ALTER TABLE api_keys DISABLE TRIGGER api_keys_changed;
		UPDATE api_keys SET revoked_at = now() WHERE id = '`+f.key.String()+`';
		ALTER TABLE api_keys ENABLE TRIGGER api_keys_changed`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AuthenticateKey(ctx, secrets.Hash(f.plain), ""); err != nil {
		t.Fatalf("a kept key was read again: %v", err)
	}

	// Revoked through another process, it is refused.
	if _, err := f.process().RevokeAPIKey(ctx, f.org, f.key); err != nil {
		t.Fatal(err)
	}
	f.seenWithin(p, "", func(_ db.KeyAuth, err error) bool { return domain.ErrorCode(err) == domain.EUNAUTHORIZED })
}

func TestAKeyRevokedThroughTheSameProcessIsRefusedAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newLeaseFixture(t)
	p := f.process()
	db.SetKeyCacheTTL(p, time.Hour)
	f.keeping(p, "")
	// Without the trigger's notice: only the process's own drop can act.
	if _, err := f.d.Pool().Exec(ctx, `ALTER TABLE api_keys DISABLE TRIGGER api_keys_changed`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RevokeAPIKey(ctx, f.org, f.key); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AuthenticateKey(ctx, secrets.Hash(f.plain), ""); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
		t.Fatalf("the call right after the revocation: %v, want EUNAUTHORIZED", err)
	}
}

func TestAnAddonSwitchedOffThroughAnotherProcessIsSeenOnTheTriggersNotice(t *testing.T) {
	ctx := context.Background()
	f := newLeaseFixture(t)
	if _, err := f.d.SetAddon(ctx, f.org, domain.AddonStock, true); err != nil {
		t.Fatal(err)
	}
	p := f.process()
	db.SetKeyCacheTTL(p, time.Hour)
	if a := f.keeping(p, domain.AddonStock); !a.AddonOn {
		t.Fatalf("stock on: %+v", a)
	}
	if _, err := f.process().SetAddon(ctx, f.org, domain.AddonStock, false); err != nil {
		t.Fatal(err)
	}
	f.seenWithin(p, domain.AddonStock, func(a db.KeyAuth, err error) bool { return err == nil && !a.AddonOn })
}

func TestNothingIsKeptWhileTheProcessIsNotListening(t *testing.T) {
	ctx := context.Background()
	f := newLeaseFixture(t)
	proxy := testdb.NewProxy(t, testdb.Target(t, f.d.URL))
	p, err := db.Connect(ctx, proxy.Through(t, f.d.URL), 4)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	db.SetKeyCacheTTL(p, time.Hour)
	f.keeping(p, "")

	// The connection goes (and with it the notices): what was kept is
	// dropped, and nothing is kept until it listens again.
	proxy.Cut()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _ = p.AuthenticateKey(ctx, secrets.Hash(f.plain), "")
		if n, live := db.KeysKept(p); n == 0 && !live {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the key is still kept 10 s after the listening connection was cut")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A revocation made meanwhile is seen by the next call.
	if _, err := f.d.RevokeAPIKey(ctx, f.org, f.key); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AuthenticateKey(ctx, secrets.Hash(f.plain), ""); domain.ErrorCode(err) != domain.EUNAUTHORIZED {
		t.Fatalf("the call after the revocation: %v, want EUNAUTHORIZED", err)
	}
}
