-- Deliveries that respect the receiver (docs/webhooks.md#delivery-controls).

-- A subscription's settings: at most rate_limit_per_second attempts start in
-- any one second (NULL: no limit), at most max_in_flight run at once, and
-- with ordering per_entity one entity's deliveries go one at a time, in
-- event order. Adding columns with constant defaults rewrites nothing; the
-- checks read the table once, and it is small.
ALTER TABLE webhook_subscriptions
    ADD COLUMN rate_limit_per_second integer,
    ADD COLUMN max_in_flight integer NOT NULL DEFAULT 10,
    ADD COLUMN ordering text NOT NULL DEFAULT 'none',
    ADD CONSTRAINT webhook_subscriptions_rate_limit CHECK (rate_limit_per_second BETWEEN 1 AND 1000),
    ADD CONSTRAINT webhook_subscriptions_max_in_flight CHECK (max_in_flight BETWEEN 1 AND 100),
    ADD CONSTRAINT webhook_subscriptions_ordering CHECK (ordering IN ('none', 'per_entity'));

-- What an event is about (domain.Entity); NULL for events written before.
ALTER TABLE events ADD COLUMN entity_type text, ADD COLUMN entity_id text;

-- A delivery's entity, as type:id, copied from its event when it is made.
ALTER TABLE webhook_deliveries ADD COLUMN entity text;

-- held: waiting, without spending attempts, while its subscription is
-- failing; skipped: support let a later delivery of its entity go first.
-- The new check is added without reading the table, then validated under
-- a lock that lets writes through.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check,
    ADD CONSTRAINT webhook_deliveries_status_check
        CHECK (status IN ('pending', 'succeeded', 'failed', 'exhausted', 'held', 'skipped')) NOT VALID;
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_status_check;
