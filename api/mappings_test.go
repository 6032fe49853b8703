package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/commerce-integration/commerce/domain"
)

const erpMapping = `function map(post) {
  const so = post.body.SalesOrder;
  if (so.Status === "DRAFT") return null;
  return {order_ref: so.DocNum, status: {SHP: "shipped", CNF: "confirmed"}[so.Status]};
}`

// mappingCall makes a request to a mapping route, checks its answer
// against the OpenAPI document, and decodes it.
func (f *fixture) mappingCall(t *testing.T, validate func(*http.Request, int, http.Header, []byte) error, method, path, key string, body any, out any) int {
	t.Helper()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	status, hdr, answer := f.do(method, path, key, strings.NewReader(string(raw)), "Content-Type", "application/json")
	if validate == nil {
		// (A dry run's receipt: null is not yet described as nullable.)
	} else if err := validate(req, status, hdr, answer); err != nil {
		t.Fatalf("%s %s: %d %s: not the documented answer: %v", method, path, status, answer, err)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			t.Fatalf("%s %s: %s", method, path, answer)
		}
	}
	return status
}

func TestMappingRoutesMakeVersionsAndAnswerAsDocumented(t *testing.T) {
	f := newFixture(t)
	_, validate := f.openAPI(t)
	ep := f.erpEndpoint(t)
	write := f.newKey(domain.ScopeInboundWrite, domain.ScopeInboundRead)
	read := f.newKey(domain.ScopeInboundRead)
	path := "/api/v1/inbound/endpoints/" + ep.ID.String() + "/mapping"

	var e struct {
		Error string `json:"error"`
	}
	if st := f.mappingCall(t, validate, "GET", path, read, nil, &e); st != 404 || !strings.Contains(e.Error, "no mapping") {
		t.Fatalf("before any: %d %q", st, e.Error)
	}
	if st := f.mappingCall(t, validate, "PUT", path, read, map[string]string{"source": erpMapping}, &e); st != 403 {
		t.Fatalf("without inbound:write: %d", st)
	}
	if st := f.mappingCall(t, validate, "PUT", path, write, map[string]string{"source": "function map(p) {\n  return {;\n}"}, &e); st != 400 ||
		!strings.Contains(e.Error, "source does not compile: SyntaxError") || !strings.Contains(e.Error, "(line 2:") {
		t.Fatalf("a syntax error: %d %q", st, e.Error)
	}
	if st := f.mappingCall(t, validate, "PUT", path, write, map[string]string{"source": strings.Repeat(" ", 65537)}, &e); st != 400 {
		t.Fatalf("over 64 KiB: %d %q", st, e.Error)
	}
	var v struct {
		Version   int     `json:"version"`
		SHA256    *string `json:"sha256"`
		CreatedBy string  `json:"created_by"`
		Source    *string `json:"source"`
	}
	if st := f.mappingCall(t, validate, "PUT", path, write, map[string]string{"source": erpMapping}, &v); st != 201 || v.Version != 1 ||
		v.SHA256 == nil || len(*v.SHA256) != 64 || !strings.HasPrefix(v.CreatedBy, "key:") {
		t.Fatalf("set: %d %+v", st, v)
	}
	if st := f.mappingCall(t, validate, "GET", path, read, nil, &v); st != 200 || v.Source == nil || *v.Source != erpMapping {
		t.Fatalf("get: %d %+v", st, v)
	}

	var res struct {
		Result     string          `json:"result"`
		MappedBody json.RawMessage `json:"mapped_body"`
		Error      *string         `json:"error"`
		Logs       []string        `json:"logs"`
	}
	test := map[string]any{"body": json.RawMessage(`{"SalesOrder": {"DocNum": "SO-1", "Status": "SHP"}}`)}
	if st := f.mappingCall(t, validate, "POST", path+"/test", read, test, &res); st != 200 || res.Result != "mapped" ||
		string(res.MappedBody) != `{"order_ref":"SO-1","status":"shipped"}` || res.Logs == nil {
		t.Fatalf("test: %d %+v", st, res)
	}
	test = map[string]any{"source": "function map(p) { console.log('x'); throw new Error('nope') }", "body": json.RawMessage(`{}`)}
	if st := f.mappingCall(t, validate, "POST", path+"/test", read, test, &res); st != 200 || res.Result != "failed" ||
		res.Error == nil || !strings.HasPrefix(*res.Error, "mapping failed: Error: nope (line 1:") || len(res.Logs) != 1 {
		t.Fatalf("a throw: %d %+v", st, res)
	}

	// A post through the endpoint's URL is mapped; its receipt says how.
	status, hdr, body := f.postInbound(ep.Token, `{"SalesOrder": {"DocNum": "SO-2", "Status": "DRAFT"}}`)
	if status != 200 || !strings.Contains(string(body), `"outcome":"ignored"`) {
		t.Fatalf("ignored post: %d %s", status, body)
	}
	var receipt struct {
		Outcome        string          `json:"outcome"`
		MappingVersion *int            `json:"mapping_version"`
		MappedBody     json.RawMessage `json:"mapped_body"`
	}
	rpath := "/api/v1/inbound/receipts/" + hdr.Get("X-Receipt-Id")
	if st := f.mappingCall(t, validate, "GET", rpath, read, nil, &receipt); st != 200 || receipt.Outcome != "ignored" ||
		receipt.MappingVersion == nil || *receipt.MappingVersion != 1 {
		t.Fatalf("receipt: %d %+v", st, receipt)
	}
	status, _, body = f.postInbound(ep.Token, `{"Order": {}}`)
	if status != 422 || !strings.Contains(string(body), `"mapping_version":1`) || !strings.Contains(string(body), `"error":"mapping failed: TypeError`) {
		t.Fatalf("failing post: %d %s", status, body)
	}

	if st := f.mappingCall(t, validate, "DELETE", path, write, nil, &v); st != 200 || v.Version != 2 || v.Source != nil || v.SHA256 != nil {
		t.Fatalf("delete: %d %+v", st, v)
	}
	if st := f.mappingCall(t, validate, "GET", path, read, nil, &v); st != 200 || v.Version != 2 || v.Source != nil {
		t.Fatalf("get after delete: %d %+v", st, v)
	}
	var list struct {
		Versions []struct {
			Version int     `json:"version"`
			SHA256  *string `json:"sha256"`
		} `json:"versions"`
	}
	if st := f.mappingCall(t, validate, "GET", path+"/versions", read, nil, &list); st != 200 || len(list.Versions) != 2 ||
		list.Versions[0].Version != 2 || list.Versions[1].SHA256 == nil {
		t.Fatalf("versions: %d %+v", st, list)
	}
	// Another organisation's key sees none of it.
	other := f.otherOrganisationKey(t)
	if st := f.mappingCall(t, validate, "GET", path+"/versions", other, nil, &e); st != 404 {
		t.Fatalf("another organisation: %d", st)
	}
}

func TestReplayTakesAMappingVersionAndShowsTheMappedBody(t *testing.T) {
	f := newFixture(t)
	_, validate := f.openAPI(t)
	ep := f.erpEndpoint(t)
	key := f.newKey(domain.ScopeInboundWrite, domain.ScopeInboundRead, domain.ScopeInboundReplay)
	path := "/api/v1/inbound/endpoints/" + ep.ID.String() + "/mapping"
	f.mappingCall(t, validate, "PUT", path, key, map[string]string{"source": erpMapping}, nil)
	_, hdr, _ := f.postInbound(ep.Token, `{"Order": {"DocNum": "SO-3", "Status": "SHP"}}`)
	rpath := "/api/v1/inbound/receipts/" + hdr.Get("X-Receipt-Id") + "/replay"

	var dry struct {
		Outcome        string          `json:"outcome"`
		Error          *string         `json:"error"`
		MappingVersion *int            `json:"mapping_version"`
		MappedBody     json.RawMessage `json:"mapped_body"`
	}
	// Under the mapping it failed with, a dry run fails the same way.
	f.mappingCall(t, nil, "POST", rpath, key, map[string]any{"dry_run": true, "mapping_version": "original"}, &dry)
	if dry.Outcome != "failed" || dry.Error == nil || !strings.HasPrefix(*dry.Error, "mapping failed: TypeError") {
		t.Fatalf("original: %+v", dry)
	}
	fixed := `function map(post) { const so = post.body.Order || post.body.SalesOrder; return {order_ref: so.DocNum, status: "shipped"} }`
	f.mappingCall(t, validate, "PUT", path, key, map[string]string{"source": fixed}, nil)
	f.mappingCall(t, nil, "POST", rpath, key, map[string]any{"dry_run": true}, &dry)
	if dry.MappingVersion == nil || *dry.MappingVersion != 2 || string(dry.MappedBody) != `{"order_ref":"SO-3","status":"shipped"}` {
		t.Fatalf("current: %+v %s", dry, dry.MappedBody)
	}
	f.mappingCall(t, nil, "POST", rpath, key, map[string]any{"dry_run": true, "mapping_version": 1}, &dry)
	if dry.Error == nil || !strings.Contains(*dry.Error, "(version 1)") {
		t.Fatalf("version 1: %+v", dry)
	}
	var e struct {
		Error string `json:"error"`
	}
	if st := f.mappingCall(t, validate, "POST", rpath, key, map[string]any{"dry_run": true, "mapping_version": 9}, &e); st != 404 ||
		!strings.Contains(e.Error, "no mapping version 9") {
		t.Fatalf("an unknown version: %d %q", st, e.Error)
	}
	if st := f.mappingCall(t, validate, "POST", rpath, key, map[string]any{"dry_run": true, "mapping_version": "newest"}, &e); st != 400 {
		t.Fatalf("a word that is not a choice: %d %q", st, e.Error)
	}
}
