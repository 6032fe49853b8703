package db

import (
	"context"
	"strconv"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/commerce-integration/commerce/domain"
)

// SupplierFilter narrows a supplier list: Search matches name and email
// (case-insensitive substring).
type SupplierFilter struct{ Search string }

const supplierColumns = `s.id, s.name, s.email, s.phone, s.currency, s.payment_terms, s.external_refs, s.created_at, s.updated_at`

// supplierFields are the scan targets of supplierColumns.
func supplierFields(s *domain.Supplier) []any {
	return []any{&s.ID, &s.Name, &s.Email, &s.Phone, &s.Currency, &s.PaymentTerms, &s.ExternalRefs, &s.CreatedAt, &s.UpdatedAt}
}

func scanSupplier(r pgx.Row) (domain.Supplier, error) {
	var s domain.Supplier
	err := r.Scan(supplierFields(&s)...)
	return s, err
}

// ListSuppliers lists the organisation's suppliers, newest first.
func (d *DB) ListSuppliers(ctx context.Context, orgID uuid.UUID, f SupplierFilter, p Page) ([]domain.Supplier, error) {
	c := newConds()
	c.add("s.org_id = ?", orgID)
	c.addIf(f.Search != "", "(s.name || chr(31) || coalesce(s.email, '')) ILIKE ?", searchPattern(f.Search))
	return listPage(ctx, d.pool, `SELECT `+supplierColumns+` FROM suppliers s`, "suppliers", "s", c, p, scanSupplier)
}

// Supplier returns one of the organisation's suppliers with its contacts,
// the primary one first, then oldest first, at most domain.ContactsPerRecord.
func (d *DB) Supplier(ctx context.Context, orgID, id uuid.UUID) (domain.SupplierDetail, error) {
	var s domain.SupplierDetail
	err := d.detail(ctx, "supplier",
		func(r pgx.Row) error {
			return r.Scan(supplierFields(&s.Supplier)...)
		},
		[]string{
			`SELECT ` + supplierColumns + ` FROM suppliers s WHERE s.org_id = $1 AND s.id = $2`,
			`SELECT id, name, email, phone, is_primary FROM supplier_contacts
			 WHERE org_id = $1 AND supplier_id = $2 ORDER BY is_primary DESC, created_at, id LIMIT ` + strconv.Itoa(domain.ContactsPerRecord),
		}, []any{orgID, id},
		collect(&s.Contacts, scanContact))
	return s, err
}
