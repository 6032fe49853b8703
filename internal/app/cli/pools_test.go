package cli_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/internal/app/cli"
	"github.com/commerce-integration/commerce/internal/config"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// The API's /metrics exports both of its pools, the main one (api) and the
// one for rate limits (api-rate), each with its size: the pool-saturation
// alert and the long run's held connections read them.
func TestTheAPIExportsBothOfItsPools(t *testing.T) {
	d := testdb.New(t)
	rt := &cli.Runtime{Cfg: config.Config{BaseURL: "http://commerce.test"}, DB: d.DB, ServiceKey: make([]byte, 32)}
	_, series, err := rt.APIHandler()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	series.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	main, rate := d.DB.PoolSizes()
	for _, want := range []string{
		fmt.Sprintf(`commerce_db_pool_max_connections{pool="api"} %d`, main),
		fmt.Sprintf(`commerce_db_pool_max_connections{pool="api-rate"} %d`, rate),
		`commerce_db_pool_idle_connections{pool="api"}`,
		`commerce_db_pool_idle_connections{pool="api-rate"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
}
