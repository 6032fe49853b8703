package domain

import (
	"reflect"
	"testing"
)

// Each action's entry names the type of its own answer fields, and that
// type says it is this action's: the OpenAPI document describes each
// action's answer from it, and package db builds the answer from a value
// of it (AnswerFields takes only an ActionAnswer).
func TestEveryActionNamesItsAnswerType(t *testing.T) {
	seen := map[reflect.Type]Action{}
	for _, d := range ActionDefs() {
		if d.Answer == nil {
			t.Fatalf("%s names no answer type", d.Action)
		}
		a, ok := reflect.New(d.Answer).Elem().Interface().(ActionAnswer)
		if !ok {
			t.Fatalf("%s: %s is not an ActionAnswer", d.Action, d.Answer)
		}
		if a.AnswerOf() != d.Action {
			t.Errorf("%s: %s is the answer of %s", d.Action, d.Answer, a.AnswerOf())
		}
		if other, dup := seen[d.Answer]; dup {
			t.Errorf("%s and %s share the answer type %s", d.Action, other, d.Answer)
		}
		seen[d.Answer] = d.Action
	}
}

// AnswerFields keeps the JSON object of the answer, lists as lists.
func TestAnswerFields(t *testing.T) {
	m := AnswerFields(UpsertProductsAnswer{Upserted: 1, Created: 1, Errors: []RowError{}})
	if m["upserted"] != 1.0 || m["updated"] != 0.0 || len(m) != 5 {
		t.Fatalf("fields = %v", m)
	}
	if errs, ok := m["errors"].([]any); !ok || len(errs) != 0 {
		t.Fatalf("errors = %#v, want []", m["errors"])
	}
}
