-- Operational events (docs/webhooks.md#operational-events): where each
-- subscription and endpoint stands. Columns with constant defaults: adding
-- them rewrites nothing.

-- Failed attempts in a row across the subscription's deliveries, the last
-- failure, and since when the subscription is failing (NULL: it is not).
ALTER TABLE webhook_subscriptions
    ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0,
    ADD COLUMN failing_since timestamptz,
    ADD COLUMN last_failure_status integer,
    ADD COLUMN last_failure_error text;

-- Since when the endpoint's last 15 minutes are failing (NULL: they are not).
ALTER TABLE inbound_endpoints ADD COLUMN failing_since timestamptz;
