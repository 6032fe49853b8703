package dev

import (
	"testing"

	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/outbound"
)

// commerce dev lets webhooks reach loopback receivers and nothing else
// private, and an explicit COMMERCE_ALLOW_PRIVATE_TARGETS wins, false
// included; its /metrics is on a free port of the machine unless given.
func TestDevAllowsLoopbackTargetsOnlyUnlessToldOtherwise(t *testing.T) {
	for _, c := range []struct {
		given bool
		value string
		want  outbound.Targets
	}{
		{false, "false", outbound.LoopbackTargets},
		{true, "false", outbound.PublicTargets},
		{true, "true", outbound.AnyTarget},
		{true, "loopback", outbound.LoopbackTargets},
	} {
		cfg := devDefaults(config.Config{PrivateTargets: c.value, MetricsListen: "127.0.0.1:9090"}, devOptions{targetsGiven: c.given})
		if got, err := cfg.Targets(); err != nil || got != c.want {
			t.Errorf("given %v %q: %v %v, want %v", c.given, c.value, got, err, c.want)
		}
		if cfg.MetricsListen != "127.0.0.1:0" {
			t.Errorf("metrics on %q, want a free port of this machine", cfg.MetricsListen)
		}
	}
	if cfg := devDefaults(config.Config{MetricsListen: "127.0.0.1:9191"}, devOptions{metricsGiven: true}); cfg.MetricsListen != "127.0.0.1:9191" {
		t.Errorf("a given metrics address lost: %q", cfg.MetricsListen)
	}
}
