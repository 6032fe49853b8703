-- Transformations (docs/webhooks.md#transformations): a subscription's
-- JavaScript, kept as versions in mapping_versions (owner_kind
-- 'subscription'), reshapes each event into the body its receiver takes.

-- A delivery keeps what its last attempt did with the transformation: the
-- version that ran (NULL: the subscription had none), and the body that
-- attempt sent when a transformation made it (NULL: none was sent, or the
-- event was sent as it is). A transformation's answer is at most 1 MB
-- (the engine's output limit), and so is the body it makes.
ALTER TABLE webhook_deliveries
    ADD COLUMN transformation_version integer,
    ADD COLUMN body_sent bytea,
    ADD CONSTRAINT webhook_deliveries_body_sent_size CHECK (octet_length(body_sent) <= 1048576);

-- Each attempt keeps the version that ran for it.
ALTER TABLE webhook_attempts ADD COLUMN transformation_version integer;

-- A delivery whose transformation answered null ends skipped, as one
-- support skipped does: the status exists since 014 (its check already
-- allows it), and it is over, not failed: neither the admission's entity
-- blockers nor the backlog count it. Its last_error says which skipped it.
