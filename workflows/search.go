package workflows

import (
	"context"
	"fmt"

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

// EnsureSearchAttributes registers the service's search attributes in the
// namespace, adding only those that are missing. API and worker processes
// both call it at start; when another process adds them at the same moment
// it still succeeds.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	missing, err := missingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	})
	if err != nil {
		if again, lerr := missingSearchAttributes(ctx, c, namespace); lerr == nil && len(again) == 0 {
			return nil
		}
		return fmt.Errorf("add search attributes: %w", err)
	}
	return nil
}

func missingSearchAttributes(ctx context.Context, c client.Client, namespace string) (map[string]enumspb.IndexedValueType, error) {
	existing, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for _, k := range searchAttributes {
		if _, ok := existing.GetCustomAttributes()[k.GetName()]; !ok {
			missing[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
		}
	}
	return missing, nil
}
