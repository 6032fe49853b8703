package api_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/commerce-integration/commerce/api"
	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/integrations"
)

// TestAnswerTypesLiveInAPI holds the rule that every REST answer's type,
// with its OpenAPI description, is an api type: db returns records and
// integrations values, neither with OpenAPI tags, and api makes its answers
// from them (README.md, "Where each rule lives"). Huma names each component
// schema after its Go type, so the rule is read off the served document: no
// schema, and no field a schema is made of (an embedded struct is flattened
// into its schema), may be a type of db or integrations. domain's types are
// allowed: they are the wire vocabulary (statuses, outcomes, changes,
// entities, the records of the business API) every layer shares.
func TestAnswerTypesLiveInAPI(t *testing.T) {
	reg := api.New(api.Deps{BaseURL: "http://localhost:8080"}).OpenAPI().Components.Schemas
	forbidden := []string{reflect.TypeFor[db.Page]().PkgPath(), reflect.TypeFor[integrations.Service]().PkgPath()}
	apiTypes := 0
	for name := range reg.Map() {
		typ := reg.TypeFromRef("#/components/schemas/" + name)
		if typ == nil {
			continue
		}
		if typ.PkgPath() == reflect.TypeFor[api.Server]().PkgPath() {
			apiTypes++
		}
		if slices.Contains(forbidden, typ.PkgPath()) {
			t.Errorf("schema %s is %s: answer types live in api", name, typ)
		}
		if typ.Kind() != reflect.Struct {
			continue
		}
		for _, f := range reflect.VisibleFields(typ) {
			if ft := named(f.Type); ft != nil && slices.Contains(forbidden, ft.PkgPath()) {
				t.Errorf("schema %s has field %s of type %s: answer types live in api", name, f.Name, f.Type)
			}
		}
	}
	// The walk found the schemas it holds to the rule.
	if apiTypes == 0 {
		t.Fatal("no component schema maps to an api type")
	}
}

// named is the named type a field holds, through pointers, slices, arrays
// and maps' values; nil for an unnamed one.
func named(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
			continue
		}
		if t.Name() == "" {
			return nil
		}
		return t
	}
}
