-- A relay claims the deliveries whose workflows it starts, and the wakes it
-- sends, for a short lease, in a transaction that commits before it calls
-- Temporal: no transaction stays open across a call to another service. It
-- marks what it started or sent, and releases what it could not; a relay
-- that stops holding a claim leaves it to run out. Starts (by workflow ID)
-- and wakes are idempotent, so a claim taken over after its lease ran out
-- doubles nothing.
ALTER TABLE webhook_deliveries ADD COLUMN start_claimed_until timestamptz;
ALTER TABLE record_wakes ADD COLUMN claimed_until timestamptz;

-- The actions an endpoint may perform are the service's table of inbound
-- actions (domain/actions.go), checked where endpoints are made; the
-- schema no longer lists them a second time.
ALTER TABLE inbound_endpoints DROP CONSTRAINT IF EXISTS inbound_endpoints_action_check;
