package db

import (
	"context"
	"errors"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/commerce-integration/commerce/domain"
)

// CustomerFilter narrows a customer list: Search matches company and email
// domain (case-insensitive substring).
type CustomerFilter struct{ Search string }

// customerRecords reads a customer's row for the customer list and a
// customer's detail.
var customerRecords = records[domain.Customer]{
	table: "customers", alias: "c",
	columns: `c.id, c.company, c.website, c.email_domain, c.vat_number, c.payment_terms, c.currency, c.external_refs, c.created_at, c.updated_at`,
	fields: func(c *domain.Customer) []any {
		return []any{&c.ID, &c.Company, &c.Website, &c.EmailDomain, &c.VATNumber, &c.PaymentTerms, &c.Currency, &c.ExternalRefs,
			&c.CreatedAt, &c.UpdatedAt}
	},
}

// ListCustomers lists the organisation's customers, newest first.
func (d *DB) ListCustomers(ctx context.Context, orgID uuid.UUID, f CustomerFilter, p Page) ([]domain.Customer, error) {
	c := newConds()
	c.add("c.org_id = ?", orgID)
	c.addIf(f.Search != "", "(c.company || chr(31) || coalesce(c.email_domain, '')) ILIKE ?", searchPattern(f.Search))
	return customerRecords.list(ctx, d.pool, c, p)
}

func scanContact(r pgx.Row) (domain.Contact, error) {
	var c domain.Contact
	err := r.Scan(&c.ID, &c.Name, &c.Email, &c.Phone, &c.IsPrimary)
	return c, err
}

// Customer returns one of the organisation's customers with its contacts,
// the primary one first, then oldest first, at most domain.ContactsPerRecord.
func (d *DB) Customer(ctx context.Context, orgID, id uuid.UUID) (domain.CustomerDetail, error) {
	var c domain.CustomerDetail
	err := d.detail(ctx, "customer", customerRecords.into(&c.Customer),
		[]string{
			customerRecords.byID(""),
			`SELECT id, name, email, phone, is_primary FROM customer_contacts
			 WHERE org_id = $1 AND customer_id = $2 ORDER BY is_primary DESC, created_at, id LIMIT ` + strconv.Itoa(domain.ContactsPerRecord),
		}, []any{orgID, id},
		collect(&c.Contacts, scanContact))
	return c, err
}

// CustomerUpsert counts what a customers upsert did.
type CustomerUpsert struct {
	Created int
	Updated int
}

// UpsertCustomers creates or updates customers in one transaction. Each entry
// is matched by external_id first; then by its email's domain against the
// customers' email_domain (free-mail domains never match, and a customer
// recorded under another external_id is not taken); matched customers are
// updated (company, and an external_id they did not have yet), others
// created. The email and phone become a contact of the customer. Entries are
// applied in order, so a later entry can match a customer an earlier one
// created. Each change emits customer.created or customer.updated.
func (d *DB) UpsertCustomers(ctx context.Context, orgID uuid.UUID, entries []domain.CustomerInput) (CustomerUpsert, error) {
	var res CustomerUpsert
	err := d.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		res, err = upsertCustomers(ctx, tx, orgID, entries)
		return err
	})
	return res, err
}

// upsertCustomers applies entries within tx (see UpsertCustomers).
func upsertCustomers(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, entries []domain.CustomerInput) (CustomerUpsert, error) {
	var res CustomerUpsert
	// One writer of an organisation's customers at a time, so two
	// concurrent calls cannot both create the customer of one domain.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('customers:' || $1::text, 0))`, orgID); err != nil {
		return res, err
	}
	var currency string
	if err := tx.QueryRow(ctx, `SELECT currency FROM organisations WHERE id = $1`, orgID).Scan(&currency); err != nil {
		return res, notFound(err, "organisation")
	}
	for _, e := range entries {
		id, found, err := matchCustomer(ctx, tx, orgID, e)
		if err != nil {
			return res, err
		}
		kind, changed := domain.CustomerUpdated, false
		if found {
			// A matched customer counts as updated; it is written, and
			// customer.updated emitted, only when something changes.
			var tag pgconn.CommandTag
			tag, err = tx.Exec(ctx, `
					UPDATE customers SET company = $3, updated_at = now(),
					       external_refs = CASE WHEN $4::text IS NOT NULL AND NOT external_refs ? 'external_id'
					                            THEN external_refs || jsonb_build_object('external_id', $4::text)
					                            ELSE external_refs END
					WHERE org_id = $1 AND id = $2
					  AND (company IS DISTINCT FROM $3 OR ($4::text IS NOT NULL AND NOT external_refs ? 'external_id'))`,
				orgID, id, e.Company, e.ExternalID)
			changed = tag.RowsAffected() > 0
			res.Updated++
		} else {
			changed = true
			id, kind = NewID(), domain.CustomerCreated
			refs := map[string]any{}
			if e.ExternalID != nil {
				refs["external_id"] = *e.ExternalID
			}
			var emailDomain *string
			if dom := e.MatchDomain(); dom != "" {
				emailDomain = &dom
			}
			_, err = tx.Exec(ctx, `
					INSERT INTO customers (id, org_id, company, email_domain, currency, external_refs)
					VALUES ($1, $2, $3, $4, $5, $6)`, id, orgID, e.Company, emailDomain, currency, refs)
			res.Created++
		}
		if err != nil {
			return res, err
		}
		contactChanged, err := upsertContact(ctx, tx, orgID, id, e)
		if err != nil {
			return res, err
		}
		if !changed && !contactChanged {
			continue
		}
		if err := emit(ctx, tx, orgID, kind.New(domain.CustomerEventData{
			ID: id, Company: e.Company, Email: e.Email, ExternalID: e.ExternalID,
		})); err != nil {
			return res, err
		}
	}
	return res, nil
}

// matchCustomer finds the customer an entry names: by external_id, else by
// email domain.
func matchCustomer(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, e domain.CustomerInput) (uuid.UUID, bool, error) {
	var id uuid.UUID
	if e.ExternalID != nil {
		err := tx.QueryRow(ctx, `SELECT id FROM customers WHERE org_id = $1 AND external_refs ->> 'external_id' = $2`,
			orgID, *e.ExternalID).Scan(&id)
		if err == nil {
			return id, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return id, false, err
		}
	}
	dom := e.MatchDomain()
	if dom == "" {
		return id, false, nil
	}
	err := tx.QueryRow(ctx, `
		SELECT id FROM customers
		WHERE org_id = $1 AND email_domain = $2
		  AND ($3::text IS NULL OR NOT external_refs ? 'external_id')
		ORDER BY created_at, id LIMIT 1`, orgID, dom, e.ExternalID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return id, false, nil
	}
	return id, err == nil, err
}

// matchCustomerByContactEmail finds the customer one of whose contacts has
// the (lower-case) email address.
func matchCustomerByContactEmail(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, email string) (uuid.UUID, bool, error) {
	var id uuid.UUID
	err := tx.QueryRow(ctx, `SELECT customer_id FROM customer_contacts WHERE org_id = $1 AND lower(email) = $2
		ORDER BY created_at, id LIMIT 1`, orgID, email).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return id, false, nil
	}
	return id, err == nil, err
}

// matchCustomerByCompany finds the newest customer of a company name.
func matchCustomerByCompany(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, company string) (uuid.UUID, bool, error) {
	var id uuid.UUID
	err := tx.QueryRow(ctx, `SELECT id FROM customers WHERE org_id = $1 AND company = $2 ORDER BY created_at DESC, id DESC LIMIT 1`,
		orgID, company).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return id, false, nil
	}
	return id, err == nil, err
}

// upsertContact makes the entry's email and phone a contact of the customer:
// the contact with that email (else, without an email, that phone) is
// updated, or a new one made; the first contact of a customer is primary.
// It reports whether it changed anything.
func upsertContact(ctx context.Context, tx pgx.Tx, orgID, customerID uuid.UUID, e domain.CustomerInput) (bool, error) {
	if e.Email == nil && e.Phone == nil {
		return false, nil
	}
	var contact uuid.UUID
	var err error
	if e.Email != nil {
		err = tx.QueryRow(ctx, `SELECT id FROM customer_contacts WHERE org_id = $1 AND customer_id = $2 AND lower(email) = $3`,
			orgID, customerID, *e.Email).Scan(&contact)
	} else {
		err = tx.QueryRow(ctx, `SELECT id FROM customer_contacts WHERE org_id = $1 AND customer_id = $2 AND email IS NULL AND phone = $3`,
			orgID, customerID, *e.Phone).Scan(&contact)
	}
	switch {
	case err == nil:
		tag, err := tx.Exec(ctx, `UPDATE customer_contacts SET phone = $3
			WHERE org_id = $1 AND id = $2 AND $3::text IS NOT NULL AND phone IS DISTINCT FROM $3`,
			orgID, contact, e.Phone)
		return tag.RowsAffected() > 0, err
	case !errors.Is(err, pgx.ErrNoRows):
		return false, err
	}
	name := e.Company
	if e.Email != nil {
		name = *e.Email
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO customer_contacts (id, org_id, customer_id, name, email, phone, is_primary)
		VALUES ($1, $2, $3, $4, $5, $6,
		        NOT EXISTS (SELECT 1 FROM customer_contacts WHERE org_id = $2 AND customer_id = $3 AND is_primary))`,
		NewID(), orgID, customerID, name, e.Email, e.Phone)
	return err == nil, err
}

// UpsertCustomers carries out a upsert_customers post (domain.ActionApplier).
func (a *actor) UpsertCustomers(b domain.UpsertCustomersBody) (domain.InboundResult, error) {
	r, err := upsertCustomers(a.ctx, a.tx, a.org, b.Customers)
	if err != nil {
		return domain.InboundResult{}, err
	}
	res := applied(nil, domain.UpsertCustomersAnswer{Created: r.Created, Updated: r.Updated})
	if r.Created+r.Updated > 0 {
		res.Outcome = domain.OutcomeApplied
	}
	return res, nil
}
