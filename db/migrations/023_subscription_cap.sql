-- How many webhook subscriptions an organisation may hold: 100 unless an
-- operator sets another (commerce org subscription-cap). Every delivery of
-- an event fans out to each subscription, so without a cap one key with
-- webhooks:write could make one request cost any number of deliveries. A
-- constant default adds the column without rewriting the table; an
-- organisation already past it keeps its subscriptions and adds none.
ALTER TABLE organisations
    ADD COLUMN subscription_cap integer NOT NULL DEFAULT 100 CHECK (subscription_cap >= 0);

-- webhook.subscription.failing and .recovered carry the subscription's
-- origin (scheme://host[:port]) only, as the audit log does: a URL's path
-- and query can hold the receiver's credentials, and an event is read by
-- any key with events:read and delivered to other receivers. The events
-- written before kept the whole URL; they keep its origin.
UPDATE events
   SET data = jsonb_set(data, '{url}', to_jsonb(substring(data->>'url' FROM '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*')))
 WHERE type IN ('webhook.subscription.failing', 'webhook.subscription.recovered')
   AND data->>'url' ~ '^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*[/?#]';
