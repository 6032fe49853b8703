package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/db"
	"github.com/commerce-integration/commerce/domain"
	"github.com/commerce-integration/commerce/internal/testdb"
)

// A read by id carries at most domain.ContactsPerRecord contacts (the
// primary one first) and domain.MessagesPerRequest messages (the first
// ones), however many were loaded.
func TestReadsByIDBoundTheirContactsAndMessages(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	email := "buyer@bolts.example"
	if _, err := d.UpsertCustomers(ctx, org.ID, []domain.CustomerInput{{Company: "Bolts Ltd", Email: &email}}); err != nil {
		t.Fatal(err)
	}
	var customer, supplier uuid.UUID
	_ = d.Pool().QueryRow(ctx, `SELECT id FROM customers WHERE org_id = $1`, org.ID).Scan(&customer)
	_ = d.Pool().QueryRow(ctx, `INSERT INTO suppliers (id, org_id, name, currency) VALUES ($1, $2, 'Steel plc', 'GBP') RETURNING id`,
		db.NewID(), org.ID).Scan(&supplier)
	// 150 more contacts for the customer, after its primary one; 150 for
	// the supplier, whose primary contact is the newest, to show it comes
	// first all the same.
	if _, err := d.Pool().Exec(ctx, `INSERT INTO customer_contacts (id, org_id, customer_id, name, created_at)
		SELECT gen_random_uuid(), $1, $2, 'extra ' || n, now() + n * interval '1 second' FROM generate_series(1, 150) n`,
		org.ID, customer); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool().Exec(ctx, `INSERT INTO supplier_contacts (id, org_id, supplier_id, name, is_primary, created_at)
		SELECT gen_random_uuid(), $1, $2, 'contact ' || n, n = 150, now() + n * interval '1 second' FROM generate_series(1, 150) n`,
		org.ID, supplier); err != nil {
		t.Fatal(err)
	}
	c, err := d.Customer(ctx, org.ID, customer)
	if err != nil || len(c.Contacts) != domain.ContactsPerRecord || !c.Contacts[0].IsPrimary || c.Contacts[1].Name != "extra 1" {
		t.Fatalf("customer with %d contacts, first %+v, %v; want %d, the primary first", len(c.Contacts), c.Contacts[0], err, domain.ContactsPerRecord)
	}
	s, err := d.Supplier(ctx, org.ID, supplier)
	if err != nil || len(s.Contacts) != domain.ContactsPerRecord || !s.Contacts[0].IsPrimary || s.Contacts[1].Name != "contact 1" {
		t.Fatalf("supplier with %d contacts, first %+v, %v; want %d, the primary first", len(s.Contacts), s.Contacts[0], err, domain.ContactsPerRecord)
	}

	req, err := d.CreateRequest(ctx, org.ID, domain.NewRequest{Text: "500 x M8 bolts", Title: "M8 bolts"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool().Exec(ctx, `INSERT INTO request_messages (id, org_id, thread_id, role, blocks, created_at)
		SELECT gen_random_uuid(), $1, $2, 'assistant', '[]', now() + n * interval '1 second' FROM generate_series(1, 600) n`,
		org.ID, req.ID); err != nil {
		t.Fatal(err)
	}
	r, err := d.Request(ctx, org.ID, req.ID)
	if err != nil || len(r.Messages) != domain.MessagesPerRequest || r.Messages[0].Role != domain.RoleUser {
		t.Fatalf("request with %d messages, %v; want the first %d", len(r.Messages), err, domain.MessagesPerRequest)
	}
}

// The reads of the worker's relays take at most what they are asked for,
// however much is waiting: the wakes to send, the events to relay, the
// quotes awaiting their expiry timer (the retention sweep's batches are
// TestPruneDeletesOnlyWhatIsPastItsRetention's).
func TestRelayReadsAreBounded(t *testing.T) {
	ctx := context.Background()
	d := testdb.New(t)
	org, _, _ := d.CreateOrganisation(ctx, db.NewOrganisation{Name: "Acme", OwnerEmail: "owner@acme.example"})
	const waiting, batch = 250, 100
	for _, sql := range []string{
		`INSERT INTO record_wakes (org_id, kind, receipt_id) SELECT $1, 'inbound', gen_random_uuid() FROM generate_series(1, 250)`,
		`INSERT INTO events (id, org_id, type, data) SELECT gen_random_uuid(), $1, 'order.created', '{}' FROM generate_series(1, 250)`,
		`INSERT INTO quotes (id, org_id, number, status, currency, valid_until, subtotal_minor, vat_minor, total_minor)
		 SELECT gen_random_uuid(), $1, 'Q-' || n, 'sent', 'GBP', current_date + 30, 0, 0, 0 FROM generate_series(1, 250) n`,
	} {
		if _, err := d.Pool().Exec(ctx, sql, org.ID); err != nil {
			t.Fatal(err)
		}
	}
	var batches []int
	for {
		ws, err := d.ClaimRecordWakes(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, len(ws))
		if err := d.DeleteRecordWakes(ctx, wakeIDs(ws)); err != nil {
			t.Fatal(err)
		}
		if len(ws) < batch {
			break
		}
	}
	if len(batches) != 3 || batches[0] != batch || batches[1] != batch || batches[2] != waiting-2*batch {
		t.Fatalf("wakes sent in batches of %v, want 100, 100, 50", batches)
	}
	if n, err := d.RelayEvents(ctx, batch); err != nil || n != batch {
		t.Fatalf("relayed %d events, %v; want %d of %d", n, err, batch, waiting)
	}
	if qs, err := d.QuotesAwaitingExpiryTimer(ctx, batch); err != nil || len(qs) != batch {
		t.Fatalf("read %d quotes, %v; want %d of %d", len(qs), err, batch, waiting)
	}
}
