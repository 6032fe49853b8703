package db

import (
	"context"
	"strconv"

	"github.com/google/uuid"

	"github.com/commerce-integration/commerce/domain"
)

// SupplierFilter narrows a supplier list: Search matches name and email
// (case-insensitive substring).
type SupplierFilter struct{ Search string }

// supplierRecords reads a supplier's row for the supplier list and a
// supplier's detail.
var supplierRecords = records[domain.Supplier]{
	table: "suppliers", alias: "s",
	columns: `s.id, s.name, s.email, s.phone, s.currency, s.payment_terms, s.external_refs, s.created_at, s.updated_at`,
	fields: func(s *domain.Supplier) []any {
		return []any{&s.ID, &s.Name, &s.Email, &s.Phone, &s.Currency, &s.PaymentTerms, &s.ExternalRefs, &s.CreatedAt, &s.UpdatedAt}
	},
}

// ListSuppliers lists the organisation's suppliers, newest first.
func (d *DB) ListSuppliers(ctx context.Context, orgID uuid.UUID, f SupplierFilter, p Page) ([]domain.Supplier, error) {
	c := newConds()
	c.add("s.org_id = ?", orgID)
	c.addIf(f.Search != "", "(s.name || chr(31) || coalesce(s.email, '')) ILIKE ?", searchPattern(f.Search))
	return supplierRecords.list(ctx, d.pool, c, p)
}

// Supplier returns one of the organisation's suppliers with its contacts,
// the primary one first, then oldest first, at most domain.ContactsPerRecord.
func (d *DB) Supplier(ctx context.Context, orgID, id uuid.UUID) (domain.SupplierDetail, error) {
	var s domain.SupplierDetail
	err := d.detail(ctx, "supplier", supplierRecords.into(&s.Supplier),
		[]string{
			supplierRecords.byID(""),
			`SELECT id, name, email, phone, is_primary FROM supplier_contacts
			 WHERE org_id = $1 AND supplier_id = $2 ORDER BY is_primary DESC, created_at, id LIMIT ` + strconv.Itoa(domain.ContactsPerRecord),
		}, []any{orgID, id},
		collect(&s.Contacts, scanContact))
	return s, err
}
