package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/cursor"
	"github.com/commerce-integration/commerce/internal/testdb"
)

func TestFaultsAreLoggedWithTheRequestIDAndAnsweredWithoutDetail(t *testing.T) {
	d := testdb.New(t)
	ctx := context.Background()
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	_, key, _ := d.CreateAPIKey(ctx, org.ID, "k", domain.AllScopes)

	// A pool of its own, closed before the call: the database is "down".
	broken, err := db.Connect(ctx, d.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	broken.Close()
	core, logs := observer.New(zapcore.InfoLevel)
	srv := httptest.NewServer(api.New(api.Deps{DB: broken, Logger: zap.New(core), Cursors: cursor.New(make([]byte, 32))}).Handler())
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/products", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 500 || strings.TrimSpace(string(body)) != `{"error":"Internal server error"}` {
		t.Fatalf("answer %d %s, want a bare 500", resp.StatusCode, body)
	}
	reqID := resp.Header.Get("X-Request-Id")
	if reqID == "" {
		t.Fatal("no X-Request-Id")
	}
	entries := logs.All()
	if len(entries) < 2 {
		t.Fatalf("%d log lines, want the fault and the request", len(entries))
	}
	var sawFault bool
	for _, e := range entries {
		if e.ContextMap()["request_id"] != reqID {
			t.Errorf("log line %q has request_id %v, want %s", e.Message, e.ContextMap()["request_id"], reqID)
		}
		sawFault = sawFault || (e.Level == zapcore.ErrorLevel && e.ContextMap()["error"] != nil)
	}
	if !sawFault {
		t.Error("the fault itself was not logged with its error")
	}
}
