---- tern: disable-tx ----
-- References compare ignoring case (docs/decisions.md, "References ignore
-- case"): an inbound post finds a record by lower(reference), and a load
-- wakes the parked posts whose wait keys equal its own ignoring case. These
-- indexes serve those lookups; the unique indexes on the exact spelling
-- stay, so two records may still differ only by case. Built without
-- blocking writes to the tables.
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_number_ci ON orders (org_id, lower(number));
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_po_ref_ci ON orders (org_id, lower(customer_po_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS quotes_number_ci ON quotes (org_id, lower(number));
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_number_ci ON deliveries (org_id, lower(number));
CREATE INDEX CONCURRENTLY IF NOT EXISTS deliveries_consignment_ci ON deliveries (org_id, lower(consignment_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS purchase_orders_number_ci ON purchase_orders (org_id, lower(number));
CREATE INDEX CONCURRENTLY IF NOT EXISTS request_threads_external_ref_ci ON request_threads (org_id, lower(external_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS order_invoices_ref_ci ON order_invoices (org_id, order_id, lower(invoice_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS supplier_invoices_ref_ci ON supplier_invoices (org_id, po_id, lower(invoice_ref));
CREATE INDEX CONCURRENTLY IF NOT EXISTS inbound_receipt_waits_key_ci ON inbound_receipt_waits (org_id, lower(key));
