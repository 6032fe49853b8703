package api_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/commerce-integration/commerce/api"
)

// Each write gives its largest body the time to arrive over a 1 MB/s link
// (Huma's default would be 5 s whatever the size), and a body trickling in
// for longer than 5 s is still read.
func TestWritesGiveTheirLargestBodyTimeToArrive(t *testing.T) {
	f := newFixture(t)
	s := api.New(api.Deps{BaseURL: "http://localhost"})
	writes := 0
	for path, item := range s.OpenAPI().Paths {
		if op := item.Post; op != nil && len(op.Security) > 0 {
			writes++
			atOneMBps := time.Duration(op.MaxBodyBytes>>20) * time.Second
			if op.MaxBodyBytes == 0 || op.BodyReadTimeout < atOneMBps+5*time.Second {
				t.Errorf("POST %s: %s to read up to %d bytes", path, op.BodyReadTimeout, op.MaxBodyBytes)
			}
		}
	}
	if writes < 4 {
		t.Fatalf("%d write routes found", writes)
	}

	r, w := io.Pipe()
	go func() {
		_, _ = io.WriteString(w, `{"customers": [{"company": "Slow`)
		time.Sleep(6 * time.Second)
		_, _ = io.WriteString(w, ` Link Ltd"}]}`)
		_ = w.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/api/v1/customers", r)
	req.Header.Set("Authorization", "Bearer "+f.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a body taking 6 s: %d %s", resp.StatusCode, b)
	}
}
