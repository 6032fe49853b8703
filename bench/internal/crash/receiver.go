package crash

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/signature"
)

// receiver is the subscriber's end: it checks both signatures of every
// request and records, per event id, each delivery id it was sent and how
// many times. While down it answers 503 to every request that verifies.
type receiver struct {
	secret string
	down   atomic.Bool

	mu       sync.Mutex
	arrivals map[string]map[string]int // event id -> delivery id -> requests answered 2xx
	bad      int                       // requests whose signatures or ids did not verify
	// tries are the attempt numbers (X-Service-Attempt) each delivery id
	// was sent with, and whether one of them was answered 2xx.
	tries map[string]map[int]bool
	// refused counts the requests answered 503 while down; firstRefused
	// is the first of them, and upAt when the receiver last came up.
	refused      int
	firstRefused time.Time
	upAt         time.Time
	// first is each event's first arrival, in arrival order, with its time.
	first []arrival
}

// arrival is an event's first request.
type arrival struct {
	event string
	at    time.Time
}

func newReceiver() *receiver {
	return &receiver{arrivals: map[string]map[string]int{}, tries: map[string]map[int]bool{}}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	eventID := r.Header.Get(domain.HeaderEventID)
	deliveryID := r.Header.Get(domain.HeaderDeliveryID)
	now := time.Now()
	// Both schemes must verify, and the webhook-id, the event id header and
	// the body's id must name the same event.
	ok := signature.Verify(r.Header.Get(signature.Header), rc.secret, body, now, signature.DefaultTolerance) == nil
	_, stdErr := signature.StandardVerified(r.Header.Get(signature.HeaderWebhookID), r.Header.Get(signature.HeaderWebhookTimestamp),
		r.Header.Get(signature.HeaderWebhookSignature), rc.secret, body, now, signature.DefaultTolerance)
	var envelope struct {
		ID string `json:"id"`
	}
	ok = ok && stdErr == nil && json.Unmarshal(body, &envelope) == nil &&
		eventID != "" && deliveryID != "" && envelope.ID == eventID && r.Header.Get(signature.HeaderWebhookID) == eventID

	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !ok {
		rc.bad++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	attempt, _ := strconv.Atoi(r.Header.Get(domain.HeaderAttempt))
	byAttempt := rc.tries[deliveryID]
	if byAttempt == nil {
		byAttempt = map[int]bool{}
		rc.tries[deliveryID] = byAttempt
	}
	if rc.down.Load() {
		if _, seen := byAttempt[attempt]; !seen {
			byAttempt[attempt] = false
		}
		if rc.refused == 0 {
			rc.firstRefused = now
		}
		rc.refused++
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	byAttempt[attempt] = true
	byDelivery := rc.arrivals[eventID]
	if byDelivery == nil {
		byDelivery = map[string]int{}
		rc.arrivals[eventID] = byDelivery
		rc.first = append(rc.first, arrival{event: eventID, at: now})
	}
	byDelivery[deliveryID]++
	w.WriteHeader(http.StatusNoContent)
}

// setDown takes the receiver down, or brings it up and notes when.
func (rc *receiver) setDown(down bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.down.Store(down)
	if !down {
		rc.upAt = time.Now()
	}
}

// downSpell is when the receiver first refused a request and when it
// last came up (zero times where neither happened).
func (rc *receiver) downSpell() (firstRefused, up time.Time) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.firstRefused, rc.upAt
}

// events is how many distinct events have arrived.
func (rc *receiver) events() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.arrivals)
}

// firsts copies each event's first arrival, in arrival order.
func (rc *receiver) firsts() []arrival {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]arrival(nil), rc.first...)
}

// attempts copies the attempt numbers each delivery id was sent with, and
// whether each was answered 2xx.
func (rc *receiver) attempts() map[string]map[int]bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]map[int]bool, len(rc.tries))
	for d, m := range rc.tries {
		out[d] = maps.Clone(m)
	}
	return out
}

// refusals is how many requests were answered 503 while down.
func (rc *receiver) refusals() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.refused
}

// snapshot copies what arrived, and the count of requests refused.
func (rc *receiver) snapshot() (map[string]map[string]int, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make(map[string]map[string]int, len(rc.arrivals))
	for e, m := range rc.arrivals {
		c := make(map[string]int, len(m))
		for d, n := range m {
			c[d] = n
		}
		out[e] = c
	}
	return out, rc.bad
}
