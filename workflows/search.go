package workflows

import (
	"context"
	"fmt"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Search attributes every workflow carries so an operator can find, in the
// Temporal UI, every run of one organisation, action, endpoint or receipt.
var (
	OrgIDAttr      = temporal.NewSearchAttributeKeyKeyword("CommerceOrgId")
	ActionAttr     = temporal.NewSearchAttributeKeyKeyword("CommerceAction")
	EndpointIDAttr = temporal.NewSearchAttributeKeyKeyword("CommerceEndpointId")
	ReceiptIDAttr  = temporal.NewSearchAttributeKeyKeyword("CommerceReceiptId")
)

var searchAttributes = []temporal.SearchAttributeKeyKeyword{OrgIDAttr, ActionAttr, EndpointIDAttr, ReceiptIDAttr}

// SearchAttributes are the custom search attributes, by name and type, the
// namespace must hold before any workflow starts. They are created where the
// Temporal server or namespace is created (the embedded server of
// `commerce dev`, the tests' server, the setup job of docker-compose.yml, or
// an operator for any other cluster), never by the service at run time:
// Temporal Cloud refuses that, and a cluster caches them for up to a minute.
func SearchAttributes() map[string]enumspb.IndexedValueType {
	m := map[string]enumspb.IndexedValueType{}
	for _, k := range searchAttributes {
		m[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return m
}

// CheckSearchAttributes reports an error naming every search attribute the
// namespace lacks, with the commands that create them.
func CheckSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	existing, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list search attributes of namespace %q: %w", namespace, err)
	}
	var missing []string
	for name := range SearchAttributes() {
		if _, ok := existing.GetCustomAttributes()[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	var b strings.Builder
	fmt.Fprintf(&b, "namespace %q lacks the search attributes %s; create them with:", namespace, strings.Join(missing, ", "))
	for _, name := range missing {
		fmt.Fprintf(&b, "\n  temporal operator search-attribute create --namespace %s --name %s --type Keyword", namespace, name)
	}
	return &MissingSearchAttributesError{Namespace: namespace, Names: missing, msg: b.String()}
}

// MissingSearchAttributesError names the search attributes a namespace
// lacks; its message carries the commands that create them.
type MissingSearchAttributesError struct {
	Namespace string
	Names     []string
	msg       string
}

func (e *MissingSearchAttributesError) Error() string { return e.msg }
