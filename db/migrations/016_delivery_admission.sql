-- The admission of deliveries (docs/webhooks.md#delivery-controls).

-- An attempt admitted and not yet recorded holds a place among its
-- subscription's max_in_flight until it is recorded, or until the lease
-- runs out (a worker killed mid-attempt).
CREATE TABLE webhook_in_flight (
    org_id          uuid NOT NULL,
    delivery_id     uuid NOT NULL,
    subscription_id uuid NOT NULL,
    until           timestamptz NOT NULL,
    -- The attempt is a failing subscription's probe.
    probe           boolean NOT NULL DEFAULT false,
    PRIMARY KEY (org_id, delivery_id),
    FOREIGN KEY (org_id, delivery_id) REFERENCES webhook_deliveries (org_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_in_flight_subscription ON webhook_in_flight (org_id, subscription_id, until);

-- next_slot_at: the first instant the next attempt may start at (its rate);
-- probe_at: when a failing subscription's next probe is due, and
-- probe_interval_seconds the wait after that one (1 minute, doubling up to
-- an hour).
ALTER TABLE webhook_subscriptions
    ADD COLUMN next_slot_at timestamptz,
    ADD COLUMN probe_at timestamptz,
    ADD COLUMN probe_interval_seconds integer;
