package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"

	"github.com/google/uuid"
)

// Workflow IDs. An ID is the idempotency key of its workflow: a second
// start with the same ID joins the first instead of repeating the work.
// Each kind of workflow has its prefix here, and nowhere else.
const (
	InboundWorkflowPrefix     = "inbound/"
	MatchWorkflowPrefix       = "match/"
	WebhookWorkflowPrefix     = "webhook/"
	QuoteExpiryWorkflowPrefix = "quote-expiry/"
	ReplayBatchWorkflowPrefix = "replay-batch/"
)

// InboundWorkflowID is the ID of the workflow that carries out a receipt.
func InboundWorkflowID(receiptID uuid.UUID) string { return InboundWorkflowPrefix + receiptID.String() }

// MaxWorkflowIDLength bounds every workflow ID the service makes, well
// under Temporal's limit (1000 bytes by default, lower on some servers).
const MaxWorkflowIDLength = 255

// matchRefKept is the longest invoice reference a match workflow ID carries
// as it is. A longer one is cut to its first matchRefPrefix bytes (at a
// character boundary), then "~" and the SHA-256 of the whole reference:
// between 126 and 129 bytes, longer than any reference kept whole, so two
// references never share an ID unless their hashes collide.
const (
	matchRefKept   = 120
	matchRefPrefix = 64
)

// MatchWorkflowID is the ID of a supplier invoice's three-way match:
// match/<po_id>/<invoice_ref>, with a long reference shortened (see
// matchRefKept), so that the ID stays within MaxWorkflowIDLength whatever
// the reference.
func MatchWorkflowID(poID uuid.UUID, invoiceRef string) string {
	ref := invoiceRef
	if len(ref) > matchRefKept {
		cut := matchRefPrefix
		for cut > 0 && !utf8.RuneStart(ref[cut]) {
			cut--
		}
		sum := sha256.Sum256([]byte(invoiceRef))
		ref = ref[:cut] + "~" + hex.EncodeToString(sum[:])
	}
	return MatchWorkflowPrefix + poID.String() + "/" + ref
}

// WebhookWorkflowID is the ID of the workflow of a webhook delivery.
func WebhookWorkflowID(deliveryID uuid.UUID) string {
	return WebhookWorkflowPrefix + deliveryID.String()
}

// QuoteExpiryWorkflowID is the ID of a quote's expiry timer.
func QuoteExpiryWorkflowID(quoteID uuid.UUID) string {
	return QuoteExpiryWorkflowPrefix + quoteID.String()
}

// ReplayBatchWorkflowID names the workflow of a bulk replay.
func ReplayBatchWorkflowID(batchID uuid.UUID) string {
	return ReplayBatchWorkflowPrefix + batchID.String()
}
