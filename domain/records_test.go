package domain

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The OpenAPI descriptions of the bounded lists of a read by id state the
// bounds the reads apply.
func TestBoundedDetailListsDocumentTheirBounds(t *testing.T) {
	for _, c := range []struct {
		typ   reflect.Type
		field string
		bound int
	}{
		{reflect.TypeFor[CustomerDetail](), "Contacts", ContactsPerRecord},
		{reflect.TypeFor[SupplierDetail](), "Contacts", ContactsPerRecord},
		{reflect.TypeFor[RequestDetail](), "Messages", MessagesPerRequest},
	} {
		f, _ := c.typ.FieldByName(c.field)
		if doc := f.Tag.Get("doc"); !strings.Contains(doc, strconv.Itoa(c.bound)) {
			t.Errorf("%s.%s says %q, not its bound %d", c.typ.Name(), c.field, doc, c.bound)
		}
	}
}
