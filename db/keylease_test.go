package db_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/secrets"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// call is one call's cost in a key's bucket (600 a minute).
const call = 100 * time.Millisecond

// leaseFixture is a key and its database, with processes of their own
// (pools and leases, as API replicas have) opened on it.
type leaseFixture struct {
	t     *testing.T
	d     *testdb.DB
	org   uuid.UUID
	key   uuid.UUID
	plain string
}

func newLeaseFixture(t *testing.T) *leaseFixture {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, err := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	key, plain, err := d.CreateAPIKey(ctx, org.ID, "erp", []domain.Scope{domain.ScopeProductsRead})
	if err != nil {
		t.Fatal(err)
	}
	return &leaseFixture{t: t, d: d, org: org.ID, key: key.ID, plain: plain}
}

// process opens another pool on the database, as another API replica.
func (f *leaseFixture) process() *db.DB {
	p, err := db.Connect(context.Background(), f.d.URL, 4)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(p.Close)
	return p
}

func (f *leaseFixture) auth(p *db.DB) db.RateDecision {
	f.t.Helper()
	a, err := p.AuthenticateKey(context.Background(), secrets.Hash(f.plain), "")
	if err != nil {
		f.t.Fatal(err)
	}
	return a.Rate
}

// bucket reads the key's bucket: how far its theoretical arrival time is
// ahead of now (calls taken and not yet refilled, times call), its raw
// arrival time, and what its last take granted.
func (f *leaseFixture) bucket() (ahead time.Duration, tat time.Time, granted int) {
	f.t.Helper()
	var us int64
	err := f.d.Pool().QueryRow(context.Background(), `
		SELECT (extract(epoch FROM tat - now()) * 1000000)::bigint, tat, granted
		FROM rate_limits WHERE org_id = $1 AND subject_id = $2`, f.org, f.key).Scan(&us, &tat, &granted)
	if err != nil {
		f.t.Fatal(err)
	}
	return time.Duration(us) * time.Microsecond, tat, granted
}

func TestAProcessSpendsALeaseOfAKeysCallsWithoutAWriteEach(t *testing.T) {
	f := newLeaseFixture(t)
	p := f.process()
	start := time.Now()
	if d := f.auth(p); !d.Allowed || d.Remaining != 599 {
		t.Fatalf("first call: %+v; want allowed with 599 remaining", d)
	}
	ahead, tat, granted := f.bucket()
	if granted != db.LeaseMax || ahead > db.LeaseMax*call || ahead < db.LeaseMax*call-time.Since(start)-call {
		t.Fatalf("bucket after the first call: %v ahead, granted %d; want a lease of %d calls", ahead, granted, db.LeaseMax)
	}
	for i := 2; i <= 21; i++ {
		d := f.auth(p)
		refilled := int(time.Since(start) / call)
		if !d.Allowed || d.Remaining > 600-i+refilled || d.Remaining < 600-i {
			t.Fatalf("call %d: %+v; want allowed with %d remaining (%d refilled at most)", i, d, 600-i, refilled)
		}
	}
	if _, after, _ := f.bucket(); !after.Equal(tat) {
		t.Fatalf("the bucket moved from %v to %v while the lease was spent: a write per call", tat, after)
	}
	// Closing the process gives back the 11 calls it did not spend.
	p.Close()
	ahead, _, _ = f.bucket()
	if ahead > 21*call || ahead < 21*call-time.Since(start)-call {
		t.Fatalf("bucket after the process closed: %v ahead; want the 21 calls spent, %v, less the refill since", ahead, 21*call)
	}
}

func TestAnExpiredLeaseIsGivenBackAndForgotten(t *testing.T) {
	t.Run("by the next call, which takes a new one", func(t *testing.T) {
		f := newLeaseFixture(t)
		p := f.process()
		db.SetLeaseTerms(p, 100*time.Millisecond, time.Hour)
		start := time.Now()
		f.auth(p)
		time.Sleep(150 * time.Millisecond)
		if d := f.auth(p); !d.Allowed {
			t.Fatalf("second call: %+v", d)
		}
		// The first lease gave back all but its one call and a second
		// lease was taken: 1 + 32 calls out of the bucket.
		ahead, _, granted := f.bucket()
		if want := (1 + db.LeaseMax) * call; granted != db.LeaseMax || ahead > want || ahead < want-time.Since(start)-call {
			t.Fatalf("bucket: %v ahead, granted %d; want %v (one call and a new lease), less the refill", ahead, granted, want)
		}
	})
	t.Run("by the sweep, when no call comes", func(t *testing.T) {
		f := newLeaseFixture(t)
		p := f.process()
		db.SetLeaseTerms(p, 100*time.Millisecond, 100*time.Millisecond)
		f.auth(p)
		if db.Leases(p) != 1 {
			t.Fatalf("%d leases held after a call, want 1", db.Leases(p))
		}
		deadline := time.Now().Add(5 * time.Second)
		for db.Leases(p) != 0 {
			if time.Now().After(deadline) {
				t.Fatal("the expired lease is still held 5 s on")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if ahead, _, _ := f.bucket(); ahead > call {
			t.Fatalf("bucket: %v ahead after the sweep; want at most the one call spent (%v)", ahead, call)
		}
	})
}

func TestLeasesOfTwoProcessesNeverLetMoreThanTheLimitThrough(t *testing.T) {
	t.Run("a full bucket, called at once through both", func(t *testing.T) {
		f := newLeaseFixture(t)
		procs := []*db.DB{f.process(), f.process()}
		var allowed, next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range 16 {
			wg.Go(func() {
				for {
					i := next.Add(1) - 1
					if i >= 700 {
						return
					}
					a, err := procs[i%2].AuthenticateKey(context.Background(), secrets.Hash(f.plain), "")
					if err != nil {
						t.Error(err)
						return
					}
					if a.Rate.Allowed {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		refill := int(time.Since(start) / call)
		if n := int(allowed.Load()); n < 600 || n > 600+refill {
			t.Fatalf("%d of 700 calls allowed; want 600 plus at most the refill of %v (%d)", n, time.Since(start), refill)
		}
	})
	t.Run("a bucket near its limit is shared a call at a time", func(t *testing.T) {
		f := newLeaseFixture(t)
		start := time.Now()
		// Ten calls left.
		if _, err := f.d.Pool().Exec(context.Background(), `
			INSERT INTO rate_limits (org_id, subject_id, tat, allowed) VALUES ($1, $2, now() + interval '59 seconds', true)`,
			f.org, f.key); err != nil {
			t.Fatal(err)
		}
		procs := []*db.DB{f.process(), f.process()}
		var each [2]int
		for i := range 30 {
			if f.auth(procs[i%2]).Allowed {
				each[i%2]++
			}
		}
		refill := int(time.Since(start) / call)
		if n := each[0] + each[1]; n < 10 || n > 10+refill {
			t.Fatalf("%d calls allowed; want the 10 left plus at most the refill (%d)", n, refill)
		}
		// Neither process holds calls the other is refused: with ten left,
		// a lease is one call.
		if each[0] < 5 || each[1] < 5 {
			t.Fatalf("allowed %d through one process and %d through the other; want the ten shared", each[0], each[1])
		}
	})
}
