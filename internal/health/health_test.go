package health

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"go.uber.org/zap"

	"github.com/commerce-integration/commerce/internal/version"
)

func TestReadyWhileEveryRequiredDependencyIsUp(t *testing.T) {
	up := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("connection refused") }
	hangs := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	optionalCalled := false
	optional := func(context.Context) error { optionalCalled = true; return errors.New("no answer") }
	for _, c := range []struct {
		name       string
		checks     []Check
		verbose    bool
		wantStatus int
		want       Answer
	}{
		{"an optional dependency down leaves the process ready", []Check{
			{Name: "postgres", Required: true, Probe: up}, {Name: "temporal", Probe: optional}},
			true, 200, Answer{Status: "ready", Checks: map[string]State{
				"postgres": {Status: "up", Required: true},
				"temporal": {Status: "down", Reason: "unreachable"}}}},
		{"a required dependency down makes it unready, with its reason", []Check{
			{Name: "postgres", Required: true, Probe: down}, {Name: "schema", Required: true, Probe: up, Reason: "old"}},
			true, 503, Answer{Status: "not ready", Checks: map[string]State{
				"postgres": {Status: "down", Required: true, Reason: "unreachable"},
				"schema":   {Status: "up", Required: true}}}},
		{"a probe that does not answer in time is down", []Check{
			{Name: "temporal", Required: true, Probe: hangs, Reason: "no answer"}},
			false, 503, Answer{Status: "not ready"}},
		{"a short answer checks only what is required", []Check{
			{Name: "postgres", Required: true, Probe: up}, {Name: "temporal", Probe: optional}},
			false, 200, Answer{Status: "ready"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			optionalCalled = false
			url := "/readyz"
			if c.verbose {
				url += "?verbose=1"
			}
			rec := httptest.NewRecorder()
			Handler(c.checks, zap.NewNop())(rec, httptest.NewRequest(http.MethodGet, url, nil))
			var got Answer
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if rec.Code != c.wantStatus || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %d %+v, want %d %+v", rec.Code, got, c.wantStatus, c.want)
			}
			if !c.verbose && optionalCalled {
				t.Error("a short answer probed an optional dependency")
			}
		})
	}
}

// /healthz names the release the process runs.
func TestLiveNamesTheRelease(t *testing.T) {
	rec := httptest.NewRecorder()
	Live(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	var got struct{ Status, Version string }
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 || got.Status != "ok" || got.Version != version.Get().Version {
		t.Fatalf("%d %s %v", rec.Code, rec.Body, err)
	}
}
