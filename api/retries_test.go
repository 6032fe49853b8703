package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

// postKeyed posts body to path with key as its Idempotency-Key.
func (f *fixture) postKeyed(apiKey, path, key, body string) (int, http.Header, []byte) {
	f.t.Helper()
	return f.do("POST", path, apiKey, strings.NewReader(body), "Idempotency-Key", key)
}

func TestRetriedPostsWithTheSameIdempotencyKeyApplyOnce(t *testing.T) {
	f := newFixture(t)
	cases := []struct{ path, body, other, count string }{
		// A customer with neither external_id nor email is created again by
		// every call without a key.
		{"/api/v1/customers", `{"customers": [{"company": "Keyed Ltd", "phone": "0161 496 0000"}]}`,
			`{"customers": [{"company": "Other Ltd", "phone": "0161 496 0000"}]}`, `SELECT count(*) FROM customers WHERE org_id = $1`},
		{"/api/v1/requests", `{"text": "Please quote 500 x M8 bolts"}`, `{"text": "Please quote 600 x M8 bolts"}`,
			`SELECT count(*) FROM request_threads WHERE org_id = $1`},
	}
	for _, c := range cases {
		status, h, first := f.postKeyed(f.key, c.path, "retry "+c.path, c.body)
		if status >= 300 || h.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%s first: %d %s", c.path, status, first)
		}
		for range 2 {
			again, h2, body := f.postKeyed(f.key, c.path, "retry "+c.path, c.body)
			if again != status || !sameJSON(body, first) || h2.Get("Idempotent-Replayed") != "true" ||
				h2.Get("Content-Type") != h.Get("Content-Type") {
				t.Fatalf("%s retry: %d %s (replayed %q, type %q); want %d %s", c.path, again, body,
					h2.Get("Idempotent-Replayed"), h2.Get("Content-Type"), status, first)
			}
		}
		if n := f.count(c.count); n != 1 {
			t.Fatalf("%s: %d records after three posts with one key, want 1", c.path, n)
		}
		other, _, body := f.postKeyed(f.key, c.path, "retry "+c.path, c.other)
		if other != http.StatusUnprocessableEntity || !strings.Contains(errorBody(t, body), "another request") {
			t.Fatalf("%s with the key and another body: %d %s", c.path, other, body)
		}
		if n := f.count(c.count); n != 1 {
			t.Fatalf("%s: another body with the key wrote a record", c.path)
		}
		// The same body under another path is another request too.
		if other, _, body := f.postKeyed(f.key, c.path+"?x=1", "retry "+c.path, c.body); other != http.StatusUnprocessableEntity {
			t.Fatalf("%s?x=1 with the key: %d %s", c.path, other, body)
		}
	}
	if n := f.count(`SELECT count(*) FROM events WHERE org_id = $1 AND type IN ('request.created', 'customer.created')`); n != 2 {
		t.Fatalf("%d created events, want 2", n)
	}
}

func TestIdempotencyKeysBelongToTheirAPIKeyAndOrganisation(t *testing.T) {
	f := newFixture(t)
	body := `{"customers": [{"company": "Keyed Ltd"}]}`
	second := f.newKey(domain.AllScopes...)
	other := f.otherOrganisationKey(t)
	for _, key := range []string{f.key, second, other} {
		status, h, b := f.postKeyed(key, "/api/v1/customers", "shared-value", body)
		if status != http.StatusOK || h.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first post of the value with another API key: %d %s (replayed %q)", status, b, h.Get("Idempotent-Replayed"))
		}
	}
	if n := f.count(`SELECT count(*) FROM customers WHERE org_id = $1`); n != 2 {
		t.Fatalf("%d customers for the organisation's two API keys, want 2", n)
	}
	// Each key holder's retry is answered from its own first answer.
	for _, key := range []string{f.key, second, other} {
		if status, h, b := f.postKeyed(key, "/api/v1/customers", "shared-value", body); status != http.StatusOK || h.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d %s", status, b)
		}
	}
}

func TestConcurrentRetriesCreateOnce(t *testing.T) {
	f := newFixture(t)
	const n = 8
	type answer struct {
		status   int
		replayed bool
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, h, _ := f.postKeyed(f.key, "/api/v1/requests", "at-once", `{"text": "Please quote 500 x M8 bolts"}`)
			answers[i] = answer{status, h.Get("Idempotent-Replayed") == "true"}
		}()
	}
	wg.Wait()
	ran := 0
	for _, a := range answers {
		switch {
		case a.status == http.StatusCreated && !a.replayed:
			ran++
		case a.status == http.StatusCreated && a.replayed, a.status == http.StatusConflict && !a.replayed:
		default:
			t.Errorf("answer %d (replayed %v): want 201 once, then 201 replayed or 409", a.status, a.replayed)
		}
	}
	if ran != 1 {
		t.Fatalf("%d requests ran, want 1: %v", ran, answers)
	}
	if c := f.count(`SELECT count(*) FROM request_threads WHERE org_id = $1`); c != 1 {
		t.Fatalf("%d requests created, want 1", c)
	}
}

func TestIdempotencyKeyRules(t *testing.T) {
	f := newFixture(t)
	for name, key := range map[string]string{"empty": "", "256 characters": strings.Repeat("k", 256), "not ASCII": "clé", "control": "a\tb"} {
		status, _, b := f.postKeyed(f.key, "/api/v1/requests", key, `{"text": "hello"}`)
		if status != http.StatusBadRequest || !strings.Contains(errorBody(t, b), "Idempotency-Key") {
			t.Errorf("%s key: %d %s", name, status, b)
		}
	}
	status, _, b := f.do("POST", "/api/v1/requests", f.key, strings.NewReader(`{"text": "hello"}`), "Idempotency-Key", "a", "Idempotency-Key", "b")
	if status != http.StatusBadRequest {
		t.Errorf("two keys: %d %s", status, b)
	}
	if n := f.count(`SELECT count(*) FROM request_threads WHERE org_id = $1`); n != 0 {
		t.Fatalf("a request with a malformed key was applied")
	}
	// A 4xx answer is kept: the retry gets it again without running.
	first, _, b1 := f.postKeyed(f.key, "/api/v1/requests", "bad-body", `{"title": "no text"}`)
	again, h, b2 := f.postKeyed(f.key, "/api/v1/requests", "bad-body", `{"title": "no text"}`)
	if first != http.StatusBadRequest || again != first || !sameJSON(b1, b2) || h.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("4xx: %d %s, then %d %s (replayed %q)", first, b1, again, b2, h.Get("Idempotent-Replayed"))
	}
	// A 5xx answer frees the key: the retry runs anew.
	ctx := context.Background()
	if _, err := f.db.Pool().Exec(ctx, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'down'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON request_threads FOR EACH ROW EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	if status, _, b := f.postKeyed(f.key, "/api/v1/requests", "after-5xx", `{"text": "hello"}`); status != http.StatusInternalServerError {
		t.Fatalf("with inserts failing: %d %s", status, b)
	}
	if _, err := f.db.Pool().Exec(ctx, `DROP TRIGGER refuse ON request_threads`); err != nil {
		t.Fatal(err)
	}
	status, h, b = f.postKeyed(f.key, "/api/v1/requests", "after-5xx", `{"text": "hello"}`)
	if status != http.StatusCreated || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("retry after a 5xx: %d %s (replayed %q)", status, b, h.Get("Idempotent-Replayed"))
	}
}

func TestExpiredIdempotencyKeysArePruned(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if status, _, b := f.postKeyed(f.key, "/api/v1/requests", "old", `{"text": "hello"}`); status != http.StatusCreated {
		t.Fatalf("%d %s", status, b)
	}
	if _, err := f.db.Pool().Exec(ctx, `UPDATE api_idempotency_keys SET created_at = now() - interval '25 hours' WHERE org_id = $1`, f.org.ID); err != nil {
		t.Fatal(err)
	}
	// Past its 24 hours the key is free: the same key runs anew, with any body.
	status, h, b := f.postKeyed(f.key, "/api/v1/requests", "old", `{"text": "another"}`)
	if status != http.StatusCreated || h.Get("Idempotent-Replayed") != "" {
		t.Fatalf("expired key: %d %s", status, b)
	}
	if _, err := f.db.Pool().Exec(ctx, `UPDATE api_idempotency_keys SET created_at = now() - interval '25 hours' WHERE org_id = $1`, f.org.ID); err != nil {
		t.Fatal(err)
	}
	if status, _, b := f.postKeyed(f.key, "/api/v1/requests", "new", `{"text": "hello"}`); status != http.StatusCreated {
		t.Fatalf("%d %s", status, b)
	}
	if n := f.count(`SELECT count(*) FROM api_idempotency_keys WHERE org_id = $1 AND key = 'old'`); n != 0 {
		t.Fatalf("an expired key was kept past the next write")
	}
}
