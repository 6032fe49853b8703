package domain

import "slices"

// Machine is a state machine over a string-valued status type: its states in
// display order, the moves between them, and the entity name used in messages.
type Machine[S ~string] struct {
	entity string
	states []S
	moves  map[S][]S
}

func newMachine[S ~string](entity string, states []S, moves map[S][]S) Machine[S] {
	return Machine[S]{entity: entity, states: states, moves: moves}
}

// States lists every state in display order.
func (m Machine[S]) States() []S { return slices.Clone(m.states) }

// Valid reports whether s is one of the machine's states.
func (m Machine[S]) Valid(s S) bool { return slices.Contains(m.states, s) }

// Allowed reports whether the table lists the move from → to. A state moves to
// itself only where the table says so (a purchase order acknowledged again).
func (m Machine[S]) Allowed(from, to S) bool { return slices.Contains(m.moves[from], to) }

// Final reports whether no move leaves s.
func (m Machine[S]) Final(s S) bool { return m.Valid(s) && len(m.moves[s]) == 0 }

// Move checks a requested move. It returns changed=false with no error when
// to equals from and the table has no self-move (a no-op the caller answers
// with "no changes"), ECONFLICT when the move is not in the table, and
// EUNPROCESSABLE when to is not a state of the machine.
func (m Machine[S]) Move(from, to S) (changed bool, err error) {
	if !m.Valid(to) {
		return false, Errorf(EUNPROCESSABLE, "unknown %s status %q", m.entity, to)
	}
	if m.Allowed(from, to) {
		return true, nil
	}
	if from == to {
		return false, nil
	}
	return false, Errorf(ECONFLICT, "%s cannot move from %s to %s", m.entity, from, to)
}

// QuoteStatus is the state of a quote.
type QuoteStatus string

// Quote states.
const (
	QuoteDraft    QuoteStatus = "draft"
	QuoteSent     QuoteStatus = "sent"
	QuoteAccepted QuoteStatus = "accepted"
	QuoteDeclined QuoteStatus = "declined"
	QuoteExpired  QuoteStatus = "expired"
)

// QuoteMachine: draft→sent, sent→accepted|declined|expired, draft→expired.
// Expiry happens at valid_until, by a durable timer.
var QuoteMachine = newMachine("quote",
	[]QuoteStatus{QuoteDraft, QuoteSent, QuoteAccepted, QuoteDeclined, QuoteExpired},
	map[QuoteStatus][]QuoteStatus{
		QuoteDraft: {QuoteSent, QuoteExpired},
		QuoteSent:  {QuoteAccepted, QuoteDeclined, QuoteExpired},
	})

// OrderStatus is the state of an order.
type OrderStatus string

// Order states.
const (
	OrderConfirmed  OrderStatus = "confirmed"
	OrderInProgress OrderStatus = "in_progress"
	OrderFulfilled  OrderStatus = "fulfilled"
	OrderCancelled  OrderStatus = "cancelled"
)

// OrderMachine: confirmed→in_progress|fulfilled|cancelled,
// in_progress→fulfilled|cancelled. fulfilled and cancelled are final.
var OrderMachine = newMachine("order",
	[]OrderStatus{OrderConfirmed, OrderInProgress, OrderFulfilled, OrderCancelled},
	map[OrderStatus][]OrderStatus{
		OrderConfirmed:  {OrderInProgress, OrderFulfilled, OrderCancelled},
		OrderInProgress: {OrderFulfilled, OrderCancelled},
	})

// DeliveryStatus is the state of a delivery.
type DeliveryStatus string

// Delivery states, in the order a delivery normally passes through them.
const (
	DeliveryPending        DeliveryStatus = "pending"
	DeliveryReady          DeliveryStatus = "ready"
	DeliveryDispatched     DeliveryStatus = "dispatched"
	DeliveryInTransit      DeliveryStatus = "in_transit"
	DeliveryOutForDelivery DeliveryStatus = "out_for_delivery"
	DeliveryDelivered      DeliveryStatus = "delivered"
	DeliveryFailed         DeliveryStatus = "failed"
	DeliveryReturned       DeliveryStatus = "returned"
	DeliveryCancelled      DeliveryStatus = "cancelled"
)

// DeliveryMachine: forward along pending→ready→dispatched→in_transit→
// out_for_delivery→delivered, skipping steps allowed; any non-final state→
// failed; failed→in_transit|out_for_delivery (a re-attempt); in_transit|failed
// →returned; pending|ready→cancelled. delivered, returned and cancelled are final.
var DeliveryMachine = newMachine("delivery",
	[]DeliveryStatus{DeliveryPending, DeliveryReady, DeliveryDispatched, DeliveryInTransit,
		DeliveryOutForDelivery, DeliveryDelivered, DeliveryFailed, DeliveryReturned, DeliveryCancelled},
	map[DeliveryStatus][]DeliveryStatus{
		DeliveryPending: {DeliveryReady, DeliveryDispatched, DeliveryInTransit, DeliveryOutForDelivery,
			DeliveryDelivered, DeliveryFailed, DeliveryCancelled},
		DeliveryReady: {DeliveryDispatched, DeliveryInTransit, DeliveryOutForDelivery, DeliveryDelivered,
			DeliveryFailed, DeliveryCancelled},
		DeliveryDispatched:     {DeliveryInTransit, DeliveryOutForDelivery, DeliveryDelivered, DeliveryFailed},
		DeliveryInTransit:      {DeliveryOutForDelivery, DeliveryDelivered, DeliveryFailed, DeliveryReturned},
		DeliveryOutForDelivery: {DeliveryDelivered, DeliveryFailed},
		DeliveryFailed:         {DeliveryInTransit, DeliveryOutForDelivery, DeliveryReturned},
	})

// ShippedDeliveryStatuses are the states of a delivery that has left the
// warehouse: dispatched or any later state.
var ShippedDeliveryStatuses = []DeliveryStatus{DeliveryDispatched, DeliveryInTransit, DeliveryOutForDelivery,
	DeliveryDelivered, DeliveryFailed, DeliveryReturned}

// Shipped reports whether a delivery in state s has left the warehouse,
// which moves a confirmed order to in_progress.
func (s DeliveryStatus) Shipped() bool { return slices.Contains(ShippedDeliveryStatuses, s) }

// OrderFollowsDeliveries is the rule by which an order follows its
// deliveries: a confirmed order moves to in_progress once any delivery has
// shipped, and to fulfilled when every delivery that is not cancelled has
// been delivered. It returns the moves to make, in order (none, one or two);
// a fulfilled or cancelled order stays as it is.
func OrderFollowsDeliveries(order OrderStatus, deliveries []DeliveryStatus) []OrderStatus {
	shipped, open, delivered := false, 0, 0
	for _, d := range deliveries {
		shipped = shipped || d.Shipped()
		if d != DeliveryCancelled {
			open++
		}
		if d == DeliveryDelivered {
			delivered++
		}
	}
	var moves []OrderStatus
	if shipped && order == OrderConfirmed {
		moves = append(moves, OrderInProgress)
		order = OrderInProgress
	}
	if open > 0 && delivered == open && OrderMachine.Allowed(order, OrderFulfilled) {
		moves = append(moves, OrderFulfilled)
	}
	return moves
}

// PurchaseOrderStatus is the state of a purchase order.
type PurchaseOrderStatus string

// Purchase order states.
const (
	PODraft             PurchaseOrderStatus = "draft"
	POSent              PurchaseOrderStatus = "sent"
	POAcknowledged      PurchaseOrderStatus = "acknowledged"
	POPartiallyReceived PurchaseOrderStatus = "partially_received"
	POReceived          PurchaseOrderStatus = "received"
	POClosed            PurchaseOrderStatus = "closed"
	POCancelled         PurchaseOrderStatus = "cancelled"
)

// PurchaseOrderMachine: draft→sent; draft|sent→acknowledged; acknowledged→
// acknowledged (a repeat updates references and dates); acknowledged|sent→
// partially_received→received; received→closed; draft|sent|acknowledged→cancelled.
var PurchaseOrderMachine = newMachine("purchase order",
	[]PurchaseOrderStatus{PODraft, POSent, POAcknowledged, POPartiallyReceived, POReceived, POClosed, POCancelled},
	map[PurchaseOrderStatus][]PurchaseOrderStatus{
		PODraft:             {POSent, POAcknowledged, POCancelled},
		POSent:              {POAcknowledged, POPartiallyReceived, POCancelled},
		POAcknowledged:      {POAcknowledged, POPartiallyReceived, POCancelled},
		POPartiallyReceived: {POReceived},
		POReceived:          {POClosed},
	})

// RequestStatus is the state of a request thread.
type RequestStatus string

// Request thread states.
const (
	RequestActive   RequestStatus = "active"
	RequestArchived RequestStatus = "archived"
)

// RequestMachine: active↔archived.
var RequestMachine = newMachine("request",
	[]RequestStatus{RequestActive, RequestArchived},
	map[RequestStatus][]RequestStatus{
		RequestActive:   {RequestArchived},
		RequestArchived: {RequestActive},
	})

// EndpointState is the state of an inbound endpoint.
type EndpointState string

// Inbound endpoint states.
const (
	EndpointActive  EndpointState = "active"
	EndpointPaused  EndpointState = "paused"
	EndpointDeleted EndpointState = "deleted"
)

// EndpointMachine: active↔paused; any→deleted (the token is destroyed; final).
var EndpointMachine = newMachine("endpoint",
	[]EndpointState{EndpointActive, EndpointPaused, EndpointDeleted},
	map[EndpointState][]EndpointState{
		EndpointActive: {EndpointPaused, EndpointDeleted},
		EndpointPaused: {EndpointActive, EndpointDeleted},
	})
