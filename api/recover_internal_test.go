package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestPanicsAnswerABare500AndAreLogged(t *testing.T) {
	core, logs := observer.New(zapcore.ErrorLevel)
	s := &Server{log: zap.New(core)}
	h := s.recoverPanics(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("secret internal detail")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/products", nil))
	if rec.Code != 500 || strings.TrimSpace(rec.Body.String()) != `{"error":"Internal server error"}` ||
		rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("answer %d %q %q", rec.Code, rec.Body.String(), rec.Header().Get("Content-Type"))
	}
	if logs.Len() != 1 || !strings.Contains(logs.All()[0].ContextMap()["panic"].(string), "secret internal detail") {
		t.Fatalf("panic not logged: %+v", logs.All())
	}
}
