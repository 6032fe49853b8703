package domain

import (
	"fmt"
	"slices"
	"testing"
)

// moveTable checks every ordered pair of a machine's states against the
// moves written out by hand from docs/design.md#state-machines: the listed ones are
// allowed, every other pair is refused with ECONFLICT, a same-state pair not
// listed is a no-op, and an unknown target is EUNPROCESSABLE.
func moveTable[S ~string](t *testing.T, m Machine[S], allowed []string, final []S) {
	t.Helper()
	want := map[string]bool{}
	for _, mv := range allowed {
		want[mv] = true
	}
	seen := 0
	for _, from := range m.States() {
		for _, to := range m.States() {
			key := fmt.Sprintf("%s>%s", from, to)
			t.Run(key, func(t *testing.T) {
				if got := m.Allowed(from, to); got != want[key] {
					t.Fatalf("Allowed(%s, %s) = %v, want %v", from, to, got, want[key])
				}
				changed, err := m.Move(from, to)
				switch {
				case want[key]:
					if err != nil || !changed {
						t.Fatalf("Move(%s, %s) = %v, %v; want allowed", from, to, changed, err)
					}
				case from == to:
					if err != nil || changed {
						t.Fatalf("Move(%s, %s) = %v, %v; want no-op", from, to, changed, err)
					}
				default:
					if ErrorCode(err) != ECONFLICT || changed {
						t.Fatalf("Move(%s, %s) = %v, %v; want ECONFLICT", from, to, changed, err)
					}
				}
			})
			if want[key] {
				seen++
			}
		}
	}
	if seen != len(allowed) {
		t.Fatalf("table lists %d moves but only %d are between known states", len(allowed), seen)
	}
	for _, s := range m.States() {
		isFinal := false
		for _, f := range final {
			isFinal = isFinal || f == s
		}
		if m.Final(s) != isFinal {
			t.Errorf("Final(%s) = %v, want %v", s, m.Final(s), isFinal)
		}
	}
	if _, err := m.Move(m.States()[0], "no_such_state"); ErrorCode(err) != EUNPROCESSABLE {
		t.Errorf("Move to unknown state: %v, want EUNPROCESSABLE", err)
	}
}

func TestQuoteMoves(t *testing.T) {
	moveTable(t, QuoteMachine, []string{
		"draft>sent", "sent>accepted", "sent>declined", "sent>expired", "draft>expired",
	}, []QuoteStatus{QuoteAccepted, QuoteDeclined, QuoteExpired})
}

func TestOrderMoves(t *testing.T) {
	moveTable(t, OrderMachine, []string{
		"confirmed>in_progress", "confirmed>fulfilled", "in_progress>fulfilled",
		"confirmed>cancelled", "in_progress>cancelled",
	}, []OrderStatus{OrderFulfilled, OrderCancelled})
}

func TestDeliveryMoves(t *testing.T) {
	moveTable(t, DeliveryMachine, []string{
		// forward, skipping allowed
		"pending>ready", "pending>dispatched", "pending>in_transit", "pending>out_for_delivery", "pending>delivered",
		"ready>dispatched", "ready>in_transit", "ready>out_for_delivery", "ready>delivered",
		"dispatched>in_transit", "dispatched>out_for_delivery", "dispatched>delivered",
		"in_transit>out_for_delivery", "in_transit>delivered",
		"out_for_delivery>delivered",
		// any non-final → failed
		"pending>failed", "ready>failed", "dispatched>failed", "in_transit>failed", "out_for_delivery>failed",
		// re-attempt after failure
		"failed>in_transit", "failed>out_for_delivery",
		// returned
		"in_transit>returned", "failed>returned",
		// cancelled before it leaves
		"pending>cancelled", "ready>cancelled",
	}, []DeliveryStatus{DeliveryDelivered, DeliveryReturned, DeliveryCancelled})
}

func TestPurchaseOrderMoves(t *testing.T) {
	moveTable(t, PurchaseOrderMachine, []string{
		"draft>sent",
		"draft>acknowledged", "sent>acknowledged", "acknowledged>acknowledged",
		"acknowledged>partially_received", "sent>partially_received", "partially_received>received",
		"received>closed",
		"draft>cancelled", "sent>cancelled", "acknowledged>cancelled",
	}, []PurchaseOrderStatus{POClosed, POCancelled})
}

func TestRequestMoves(t *testing.T) {
	moveTable(t, RequestMachine, []string{"active>archived", "archived>active"}, nil)
}

func TestEndpointMoves(t *testing.T) {
	moveTable(t, EndpointMachine, []string{
		"active>paused", "paused>active", "active>deleted", "paused>deleted",
	}, []EndpointState{EndpointDeleted})
}

func TestDeliveryShippedMovesOrderOn(t *testing.T) {
	shipped := map[DeliveryStatus]bool{
		DeliveryDispatched: true, DeliveryInTransit: true, DeliveryOutForDelivery: true,
		DeliveryDelivered: true, DeliveryFailed: true, DeliveryReturned: true,
	}
	for _, s := range DeliveryMachine.States() {
		if s.Shipped() != shipped[s] {
			t.Errorf("%s.Shipped() = %v, want %v", s, s.Shipped(), shipped[s])
		}
	}
}

func TestOrderFollowsItsDeliveries(t *testing.T) {
	for _, c := range []struct {
		name       string
		order      OrderStatus
		deliveries []DeliveryStatus
		want       []OrderStatus
	}{
		{"nothing shipped", OrderConfirmed, []DeliveryStatus{DeliveryPending, DeliveryReady}, nil},
		{"one dispatched", OrderConfirmed, []DeliveryStatus{DeliveryDispatched, DeliveryPending}, []OrderStatus{OrderInProgress}},
		{"a failed attempt has shipped", OrderConfirmed, []DeliveryStatus{DeliveryFailed}, []OrderStatus{OrderInProgress}},
		{"all delivered from confirmed", OrderConfirmed, []DeliveryStatus{DeliveryDelivered, DeliveryDelivered}, []OrderStatus{OrderInProgress, OrderFulfilled}},
		{"delivered but for a cancelled one", OrderInProgress, []DeliveryStatus{DeliveryDelivered, DeliveryCancelled}, []OrderStatus{OrderFulfilled}},
		{"one still in transit", OrderInProgress, []DeliveryStatus{DeliveryDelivered, DeliveryInTransit}, nil},
		{"only cancelled deliveries", OrderConfirmed, []DeliveryStatus{DeliveryCancelled}, nil},
		{"no deliveries", OrderConfirmed, nil, nil},
		{"a cancelled order stays", OrderCancelled, []DeliveryStatus{DeliveryDelivered}, nil},
		{"a fulfilled order stays", OrderFulfilled, []DeliveryStatus{DeliveryDelivered}, nil},
	} {
		if got := OrderFollowsDeliveries(c.order, c.deliveries); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
