package workflows

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
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

// Search attributes that say how a run came out, set by the run when it
// knows (docs/operations.md#the-temporal-ui): an inbound post's outcome
// (applied, unchanged, failed, parked, unmatched, cancelled, error) and a
// delivery's status (delivered, failed, exhausted).
var (
	OutcomeAttr        = temporal.NewSearchAttributeKeyKeyword("CommerceOutcome")
	DeliveryStatusAttr = temporal.NewSearchAttributeKeyKeyword("CommerceDeliveryStatus")
)

var searchAttributes = []temporal.SearchAttributeKeyKeyword{OrgIDAttr, ActionAttr, EndpointIDAttr, ReceiptIDAttr,
	OutcomeAttr, DeliveryStatusAttr}

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
	var noNamespace *serviceerror.NamespaceNotFound
	if errors.As(err, &noNamespace) {
		return &MissingNamespaceError{Namespace: namespace, err: err}
	}
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
		return checkUsable(ctx, c, namespace)
	}
	sort.Strings(missing)
	var b strings.Builder
	fmt.Fprintf(&b, "namespace %q lacks the search attributes %s; create them with:", namespace, strings.Join(missing, ", "))
	for _, name := range missing {
		fmt.Fprintf(&b, "\n  temporal operator search-attribute create --namespace %s --name %s --type Keyword", namespace, name)
	}
	return &MissingSearchAttributesError{Namespace: namespace, Names: missing, msg: b.String()}
}

// checkUsable asks for a count of the namespace's workflows by every
// search attribute. A server reads a namespace's attributes from a cache
// that takes up to several seconds to learn new ones: until then it refuses
// a start that sets them ("no mapping defined for search attribute"), and
// this query too, so a process that waits for it starts no workflow the
// server would refuse.
func checkUsable(ctx context.Context, c client.Client, namespace string) error {
	_, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: namespace, Query: UsableQuery()})
	if err != nil {
		return fmt.Errorf("namespace %q lists the search attributes but does not take them yet: %w", namespace, err)
	}
	return nil
}

// UsableQuery is the query checkUsable counts with, for the setup steps
// that wait for the same thing (docker-compose.yml's temporal-setup job).
func UsableQuery() string {
	names := make([]string, 0, len(searchAttributes))
	for _, k := range searchAttributes {
		names = append(names, k.GetName()+" = 'check'")
	}
	sort.Strings(names)
	return strings.Join(names, " OR ")
}

// MissingSearchAttributesError names the search attributes a namespace
// lacks; its message carries the commands that create them.
type MissingSearchAttributesError struct {
	Namespace string
	Names     []string
	msg       string
}

func (e *MissingSearchAttributesError) Error() string { return e.msg }

// MissingNamespaceError is a namespace that does not exist; its message
// carries the commands that create it with the service's search attributes.
type MissingNamespaceError struct {
	Namespace string
	err       error
}

func (e *MissingNamespaceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Temporal namespace %q does not exist (TEMPORAL_NAMESPACE); create it, with the search attributes every workflow carries, with:", e.Namespace)
	fmt.Fprintf(&b, "\n  temporal operator namespace create --namespace %s --retention 168h", e.Namespace)
	names := make([]string, 0, len(searchAttributes))
	for name := range SearchAttributes() {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&b, "\n  temporal operator search-attribute create --namespace %s --name %s --type Keyword", e.Namespace, name)
	}
	return b.String()
}

func (e *MissingNamespaceError) Unwrap() error { return e.err }
