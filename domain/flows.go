package domain

import (
	"encoding/json"
	"maps"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// The inputs and results of the service's durable workflows and of the
// activities they call. They are recorded in Temporal's workflow histories,
// so their JSON shapes are part of what a running workflow replays: a field
// may be added, never renamed or removed.

// InboundInput names an inbound post to carry out: its receipt, and the
// receipt whose effect it is (the same one, or the original of a replay).
type InboundInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	EndpointID uuid.UUID `json:"endpoint_id"`
	ReceiptID  uuid.UUID `json:"receipt_id"`
	Source     uuid.UUID `json:"source_receipt_id"`
	Action     Action    `json:"action"`
	// ParkFor, when set, shortens how long a parked post waits (the
	// workflow's default is 7 days) and how often it looks again (at most
	// half of it). The service never sets it; it exists so that a run that
	// parks and runs out can be recorded in seconds (docs/versioning.md).
	ParkFor time.Duration `json:"park_for,omitempty"`
	// Parked is set only on a run that a parked post continued as new
	// (its history had grown long): where the wait stands, so the new run
	// answers, waits and ends as the first would have.
	Parked *ParkedState `json:"parked,omitempty"`
	// Ref is the first reference the post's body names, for the run's
	// summary in the Temporal UI; empty when it names none (and on inputs
	// of older releases).
	Ref string `json:"ref,omitempty"`
}

// Summary is the one line that names the post in the Temporal UI: its
// action and first reference.
func (in InboundInput) Summary() string {
	if in.Ref == "" {
		return string(in.Action)
	}
	return string(in.Action) + " " + in.Ref
}

// ParkedState is what a parked post's workflow carries into the run it
// continues as new: the answer it gave (parked), and when its wait ends.
type ParkedState struct {
	Answer   InboundOutcome `json:"answer"`
	Deadline time.Time      `json:"deadline"`
}

// Wait keys name what a parked post waits for and what a load of records
// created, "kind:reference": a load wakes the posts whose keys it created.
const (
	WaitOrder         = "order"          // an order by number or customer PO reference
	WaitQuote         = "quote"          // the order made from a quote, by the quote's number
	WaitDelivery      = "delivery"       // a delivery by number
	WaitConsignment   = "consignment"    // a delivery by consignment reference
	WaitPurchaseOrder = "purchase_order" // a purchase order by number
)

// WaitKey is the key of a record of kind with the reference ref.
func WaitKey(kind, ref string) string { return kind + ":" + ref }

// RecordsCreated is the payload of the signal that wakes a parked post
// (workflows.RecordCreatedSignal): the keys of the created records it
// waits for. An empty list (a signal sent by older code) concerns every
// parked post.
type RecordsCreated struct {
	Keys []string `json:"keys,omitempty"`
}

// Concerns reports whether records with these keys may be what a post
// waiting for waiting is waiting for: yes when either list is empty (a
// wake or a post that names no keys, from older code), else when they
// share a key.
func (r RecordsCreated) Concerns(waiting []string) bool {
	if len(r.Keys) == 0 || len(waiting) == 0 {
		return true
	}
	for _, k := range r.Keys {
		for _, w := range waiting {
			if k == w {
				return true
			}
		}
	}
	return false
}

// GoodsReceived is the payload of the signal that wakes a three-way match
// (workflows.ReceiptRecordedSignal): the purchase order goods were received
// against. A nil PO (a signal sent by older code) concerns every match.
type GoodsReceived struct {
	POID *uuid.UUID `json:"po_id,omitempty"`
}

// InboundResult is what carrying out an inbound post did.
type InboundResult struct {
	Outcome Outcome        `json:"outcome"`
	Status  int            `json:"status"`
	Changes []Change       `json:"changes"`
	Extras  map[string]any `json:"extras,omitempty"`
	// WaitingFor names the record a parked post waits for; WaitingKeys
	// are its wait keys (WaitKey), by which a load of records wakes it.
	WaitingFor  string   `json:"waiting_for,omitempty"`
	WaitingKeys []string `json:"waiting_keys,omitempty"`
	// InvoiceID and POID name the supplier invoice a supplier_invoice post
	// recorded, and its purchase order, for the three-way match that follows.
	InvoiceID  *uuid.UUID `json:"invoice_id,omitempty"`
	POID       *uuid.UUID `json:"po_id,omitempty"`
	InvoiceRef string     `json:"invoice_ref,omitempty"`
}

// Parked reports whether the post waits for a record that does not exist yet.
func (r InboundResult) Parked() bool { return r.Outcome == OutcomeParked }

// InboundOutcome is the answer of an inbound post's workflow: the result,
// or the kind and message of the error it was refused with. The HTTP layer
// turns it into a status and a body.
type InboundOutcome struct {
	Result  *InboundResult `json:"result,omitempty"`
	Code    Code           `json:"code,omitempty"`
	Message string         `json:"message,omitempty"`
	// Match is the three-way match of a supplier invoice, when it ran.
	Match *MatchResult `json:"match,omitempty"`
}

// Status is the HTTP status HTTPAnswer answers.
func (o InboundOutcome) Status() int {
	if o.Code != "" || o.Result == nil {
		return o.Code.Status()
	}
	return o.Result.Status
}

// HTTPAnswer is the answer of a post whose workflow answered o: its HTTP
// status and JSON body. A refusal answers its kind's status and
// {"error": message}; a fault of the service, 500 and InternalMessage.
func (o InboundOutcome) HTTPAnswer(receiptID uuid.UUID, action Action) (int, []byte) {
	if o.Code != "" || o.Result == nil {
		status := o.Code.Status()
		msg := o.Message
		if status == http.StatusInternalServerError {
			msg = InternalMessage
		}
		return status, ErrorJSON(msg)
	}
	res := o.Result
	a := InboundAnswer{ReceiptID: receiptID, Action: action, Outcome: res.Outcome, Changes: res.Changes,
		WaitingFor: res.WaitingFor, Extras: res.Extras}
	if o.Match != nil {
		a.Extras = maps.Clone(a.Extras)
		if a.Extras == nil {
			a.Extras = map[string]any{}
		}
		a.Extras["match"] = o.Match
	}
	return res.Status, mustJSON(a)
}

// PendingAnswer is the answer of a post still running when its sender
// stops waiting: 202, outcome pending.
func PendingAnswer(receiptID uuid.UUID, action Action) (int, []byte) {
	return http.StatusAccepted, mustJSON(InboundAnswer{ReceiptID: receiptID, Action: action, Outcome: OutcomePending})
}

// ErrorJSON is the body of every error answer: {"error": msg}.
func ErrorJSON(msg string) []byte {
	return mustJSON(struct {
		Error string `json:"error"`
	}{msg})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"error":"` + InternalMessage + `"}`)
	}
	return b
}

// RecordOutcomeInput says where a receipt now stands and, with its first
// answer, what its sender is answered.
type RecordOutcomeInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	ReceiptID  uuid.UUID `json:"receipt_id"`
	Outcome    Outcome   `json:"outcome"`
	WaitingFor string    `json:"waiting_for,omitempty"`
	Error      string    `json:"error,omitempty"`
	// WaitingKeys are the wait keys of a parked post (WaitKey).
	WaitingKeys []string `json:"waiting_keys,omitempty"`
	// Answer is set on the record that goes with the workflow's first
	// answer: the receipt keeps it as what its sender (and a retry of the
	// post) is answered. Later records move the outcome only.
	Answer *InboundOutcome `json:"answer,omitempty"`
	// Action names the post's action, for the answer's body.
	Action Action `json:"action,omitempty"`
}

// Final reports whether carrying out the post ended it: applied or
// unchanged, with no three-way match to follow.
func (r InboundResult) Final() bool {
	return (r.Outcome == OutcomeApplied || r.Outcome == OutcomeUnchanged) && r.InvoiceID == nil
}

// InboundStepInput is a post for the activity that carries it out and,
// when that ends it, records its outcome in the same step.
type InboundStepInput struct {
	Post InboundInput `json:"post"`
	// KeepAnswer is set while the sender has not been answered: the record
	// then keeps the answer too (RecordOutcomeInput.Answer).
	KeepAnswer bool `json:"keep_answer,omitempty"`
}

// Refusal is a post's business rejection: the kind and the message its
// sender is answered.
type Refusal struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// InboundStep is what that activity did: the result, or the refusal; and
// whether it recorded the outcome that ends the post (FinalRecord).
type InboundStep struct {
	Result   InboundResult `json:"result"`
	Refused  *Refusal      `json:"refused,omitempty"`
	Recorded bool          `json:"recorded,omitempty"`
}

// FinalRecord is the record of a step that ended its post, as the
// workflow would record it: a refusal ends failed, with its message; a
// final result (InboundResult.Final) ends as its outcome. ok is false for
// a step that leaves the post running (parked, or a match to follow).
func (in InboundStepInput) FinalRecord(step InboundStep) (rec RecordOutcomeInput, ok bool) {
	rec = RecordOutcomeInput{OrgID: in.Post.OrgID, ReceiptID: in.Post.ReceiptID, Action: in.Post.Action}
	var answer InboundOutcome
	switch {
	case step.Refused != nil:
		rec.Outcome, rec.Error = OutcomeFailed, step.Refused.Message
		answer = InboundOutcome{Code: step.Refused.Code, Message: step.Refused.Message}
	case step.Result.Final():
		rec.Outcome = step.Result.Outcome
		res := step.Result
		answer = InboundOutcome{Result: &res}
	default:
		return RecordOutcomeInput{}, false
	}
	if in.KeepAnswer {
		rec.Answer = &answer
	}
	return rec, true
}

// MatchInput names a supplier invoice's three-way match.
type MatchInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	InvoiceID  uuid.UUID `json:"invoice_id"`
	POID       uuid.UUID `json:"po_id"`
	InvoiceRef string    `json:"invoice_ref"`
	// Deadline is set only on a run that a waiting match continued as new
	// (its history had grown long): when the wait for goods ends.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// MatchResult is where a three-way match stands.
type MatchResult struct {
	InvoiceID  uuid.UUID   `json:"invoice_id"`
	InvoiceRef string      `json:"invoice_ref"`
	Status     MatchStatus `json:"match_status"`
	Variances  []Variance  `json:"variances"`
}

// QuoteExpiryInput names the quote whose expiry timer runs, and the date it
// is valid until.
type QuoteExpiryInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	QuoteID    uuid.UUID `json:"quote_id"`
	ValidUntil Date      `json:"valid_until"`
}

// ExpireQuoteInput names the quote to expire.
type ExpireQuoteInput struct {
	OrgID   uuid.UUID `json:"org_id"`
	QuoteID uuid.UUID `json:"quote_id"`
}

// ExpireQuoteResult says what expiring a quote did.
type ExpireQuoteResult struct {
	// Expired is true when this call moved the quote to expired.
	Expired bool `json:"expired"`
	// Status is the quote's status after the call.
	Status QuoteStatus `json:"status"`
	// ValidUntil is the quote's current valid_until (it may have moved).
	ValidUntil *Date `json:"valid_until"`
}

// WebhookInput names a webhook delivery and says how far it has come.
type WebhookInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	DeliveryID uuid.UUID `json:"delivery_id"`
	// Attempts already made (0 for a new delivery).
	Attempts int `json:"attempts"`
	// Manual: the first attempt of this run is a resend support asked for
	// (of a delivery that had succeeded or was exhausted). A delivery with
	// attempts left goes on to the nightly retries if it fails; one with
	// none left ends after it.
	Manual bool `json:"manual,omitempty"`
	// Policy is how the delivery is tried; nil on runs started before it
	// was handed over, which go by the worker's (DeliverInput.Policy).
	Policy *DeliveryPolicy `json:"policy,omitempty"`
}

// AttemptsAllowed is how many attempts the delivery makes on its own.
func (in WebhookInput) AttemptsAllowed() int {
	if in.Policy == nil {
		return MaxWebhookAttempts
	}
	return in.Policy.Attempts
}

// WebhookOutcome is where a delivery's workflow left it.
type WebhookOutcome struct {
	Status   WebhookStatus `json:"status"`
	Attempts int           `json:"attempts"`
}

// DeliverInput is one attempt of a webhook delivery.
type DeliverInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	DeliveryID uuid.UUID `json:"delivery_id"`
	Attempt    int       `json:"attempt"`
	// Manual: sent because support asked (a resend).
	Manual bool `json:"manual"`
	// Last: if this attempt fails, the delivery is exhausted; otherwise it
	// is tried again at the next nightly run.
	Last bool `json:"last,omitempty"`
	// Policy is the delivery's, from its workflow's input; nil for a run
	// started before policies were handed over: the worker's applies.
	Policy *DeliveryPolicy `json:"policy,omitempty"`
}

// AdmitInput asks whether a delivery's automatic retry may go now; Tries
// counts the answers to wait it had (each wait is longer).
type AdmitInput struct {
	OrgID      uuid.UUID `json:"org_id"`
	DeliveryID uuid.UUID `json:"delivery_id"`
	Tries      int       `json:"tries,omitempty"`
	// Manual: a resend, which support asked for: it keeps to the rate and
	// the cap, not to a failing spell.
	Manual bool `json:"manual,omitempty"`
}

// Admission answers AdmitInput: go at At (a start slot its subscription's
// rate gave it, or now), or wait Wait and ask again. Held says the
// subscription is failing: the retry waits, with no attempt spent.
type Admission struct {
	Go   bool          `json:"go"`
	At   time.Time     `json:"at,omitzero"`
	Wait time.Duration `json:"wait,omitempty"`
	Held bool          `json:"held,omitempty"`
}

// DeliverResult is how an attempt of a webhook delivery went.
type DeliverResult struct {
	Succeeded  bool   `json:"succeeded"`
	StatusCode int    `json:"status_code,omitempty"`
	Error      string `json:"error,omitempty"`
	// Skipped: no request was sent, because the subscription is disabled
	// or its transformation answered null; the delivery has ended.
	Skipped bool `json:"skipped,omitempty"`
	// RetryAt is when a failed delivery that is not exhausted is tried
	// again: the next nightly run (DeliveryPolicy.RetryAt).
	RetryAt *time.Time `json:"retry_at,omitempty"`
}

// WebhookDeliveryRef names a delivery whose workflow is to be started, with
// what an operator needs to find it (its event and subscription).
type WebhookDeliveryRef struct {
	ID             uuid.UUID
	OrgID          uuid.UUID
	EventID        uuid.UUID
	EventType      string
	SubscriptionID uuid.UUID
	Attempts       int
	// TraceParent is the span that wrote the event (nil when it was not
	// traced): the delivery's workflow starts in its trace.
	TraceParent *string
	// NotBefore, when set, is the start slot its subscription's rate gave
	// the delivery: its workflow starts then.
	NotBefore time.Time
}

// ReplayBatchInput names a bulk replay to carry out.
type ReplayBatchInput struct {
	OrgID   uuid.UUID `json:"org_id"`
	BatchID uuid.UUID `json:"batch_id"`
	DryRun  bool      `json:"dry_run"`
	// Mapping chooses the mapping each receipt's body is mapped with again
	// (a batch started before mappings has none: the current one).
	Mapping MappingChoice `json:"mapping,omitzero"`
}

// ReplayChunkResult is what one chunk of a bulk replay did: how many
// receipts it finished, and whether any are left (none once the batch is
// stopped).
type ReplayChunkResult struct {
	Done      int  `json:"done"`
	Remaining bool `json:"remaining"`
}
