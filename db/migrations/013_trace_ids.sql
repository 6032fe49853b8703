-- Tracing (docs/operations.md#tracing): the trace a receipt was received
-- in, and the span that wrote an event, from which its deliveries start.
-- NULL when tracing is off. Columns without defaults: adding them rewrites
-- nothing.
ALTER TABLE inbound_receipts ADD COLUMN trace_id text;
ALTER TABLE events ADD COLUMN trace_parent text;
