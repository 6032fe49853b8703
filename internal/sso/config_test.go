package sso

import (
	"context"
	"testing"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/outbound"
)

// An issuer is https; http only to a loopback address, and only where
// private targets are allowed; the SSRF guard refuses private addresses.
func TestCheckIssuer(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		raw     string
		targets outbound.Targets
		ok      bool
	}{
		{"https://login.example.com/", outbound.PublicTargets, true},
		{"http://login.example.com", outbound.PublicTargets, false},
		{"http://127.0.0.1:5556", outbound.PublicTargets, false},
		{"http://127.0.0.1:5556", outbound.LoopbackTargets, true},
		{"http://[::1]:5556", outbound.AnyTarget, true},
		{"http://10.0.0.5", outbound.AnyTarget, false},
		{"https://10.0.0.5", outbound.PublicTargets, false},
		{"https://127.0.0.1", outbound.PublicTargets, false},
		{"ftp://login.example.com", outbound.AnyTarget, false},
		{"https://login.example.com/?x=1", outbound.PublicTargets, false},
	} {
		got, err := CheckIssuer(ctx, c.raw, c.targets)
		if (err == nil) != c.ok {
			t.Errorf("%s with %s: %q %v, want ok %v", c.raw, c.targets, got, err, c.ok)
		}
	}
	if got, _ := CheckIssuer(ctx, "https://login.example.com/", outbound.PublicTargets); got != "https://login.example.com" {
		t.Errorf("normalised to %q", got)
	}
}

// The role claim maps owner before admin; anyone else is a member, or is
// refused; a claim may be a string or a list.
func TestRoleFor(t *testing.T) {
	cfg := db.OrgSSO{RoleClaim: "groups", OwnerValues: []string{"own"}, AdminValues: []string{"adm"}, Unmatched: "member"}
	for _, c := range []struct {
		claim any
		want  domain.UserRole
	}{
		{[]any{"staff", "adm", "own"}, domain.UserOwner},
		{[]any{"adm"}, domain.UserAdmin},
		{"adm", domain.UserAdmin},
		{[]any{"staff"}, domain.UserMember},
		{nil, domain.UserMember},
		{42.0, domain.UserMember},
	} {
		if got, ok := RoleFor(cfg, map[string]any{"groups": c.claim}); !ok || got != c.want {
			t.Errorf("%v: %s %v, want %s", c.claim, got, ok, c.want)
		}
	}
	cfg.Unmatched = "refuse"
	if _, ok := RoleFor(cfg, map[string]any{"groups": []any{"staff"}}); ok {
		t.Error("an unmatched user was not refused")
	}
	if got, ok := RoleFor(cfg, map[string]any{"groups": []any{"adm"}}); !ok || got != domain.UserAdmin {
		t.Errorf("a matched user with refuse: %s %v", got, ok)
	}
}

// Settings are checked: a client id and at least one domain, lower-cased
// and unique; values need a claim; unmatched is member or refuse.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	good := func() db.OrgSSO {
		return db.OrgSSO{Issuer: "https://login.example.com", ClientID: " c ", Domains: []string{"@Acme.example", "acme.example", ""}}
	}
	in := good()
	if err := Check(ctx, &in, outbound.PublicTargets); err != nil || in.ClientID != "c" || len(in.Domains) != 1 ||
		in.Domains[0] != "acme.example" || in.Unmatched != "member" {
		t.Fatalf("%+v %v", in, err)
	}
	for name, spoil := range map[string]func(*db.OrgSSO){
		"no client id":     func(s *db.OrgSSO) { s.ClientID = "" },
		"no domain":        func(s *db.OrgSSO) { s.Domains = nil },
		"a bad domain":     func(s *db.OrgSSO) { s.Domains = []string{"acme"} },
		"values, no claim": func(s *db.OrgSSO) { s.AdminValues = []string{"x"} },
		"unmatched":        func(s *db.OrgSSO) { s.Unmatched = "admin" },
	} {
		in := good()
		spoil(&in)
		if err := Check(ctx, &in, outbound.PublicTargets); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%s: %v", name, err)
		}
	}
}
