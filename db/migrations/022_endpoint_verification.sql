-- How an inbound endpoint verifies its sender
-- (docs/design.md#sender-verification): the service's own signature
-- ('service', what every endpoint did before), the sender's own HMAC of the
-- body ('hmac'), HTTP Basic authentication ('basic'), or nothing ('none').
--
-- verification_config is what is not secret: the HMAC scheme
-- ({"hmac": {"header", "algorithm", "encoding", "prefix", "timestamp_header",
-- "tolerance_seconds"}}) or the Basic username ({"username"}); {} otherwise.
-- verification_secret_sealed is the HMAC key or the Basic password, sealed
-- under COMMERCE_SECRET_KEY and bound to the row like secret_sealed (but to
-- a place of its own, so the one cannot be copied over the other). The
-- signing secret of 'service' stays in secret_sealed, so an endpoint set
-- back to 'service' verifies with it as before.
--
-- Columns with constant defaults are added without rewriting the table;
-- every endpoint there is 'service'.
ALTER TABLE inbound_endpoints
    ADD COLUMN verification text NOT NULL DEFAULT 'service'
        CHECK (verification IN ('service', 'hmac', 'basic', 'none')),
    ADD COLUMN verification_config jsonb NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(verification_config) = 'object'),
    ADD COLUMN verification_secret_sealed bytea;

-- An hmac or basic endpoint has its secret, and no other has one; a
-- deleted endpoint has had its secrets cleared.
ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_verification_secret
    CHECK (state = 'deleted' OR (verification IN ('hmac', 'basic')) = (verification_secret_sealed IS NOT NULL));

-- require_signature is what a release before this one reads. The service
-- keeps it true for an endpoint that verifies anything (service with a
-- signing secret, hmac, basic) and false for one that verifies nothing, so
-- that while replicas of that release still run (a rolling upgrade) they
-- refuse a post to an hmac or basic endpoint (they ask for the service's
-- signature, or cannot find the secret) rather than take it unverified.
-- An hmac or basic endpoint made without a signing secret therefore
-- requires a signature with none: the rule of migration 001 that one
-- requiring a signature has a signing secret (a constraint without a name
-- of its own, found by what it says) now holds for service endpoints.
DO $$
DECLARE
    rule text;
BEGIN
    SELECT conname INTO rule FROM pg_constraint
    WHERE conrelid = 'inbound_endpoints'::regclass AND contype = 'c'
      AND pg_get_constraintdef(oid) LIKE '%require_signature%secret_sealed%'
      AND pg_get_constraintdef(oid) NOT LIKE '%verification%';
    IF rule IS NOT NULL THEN
        EXECUTE format('ALTER TABLE inbound_endpoints DROP CONSTRAINT %I', rule);
    END IF;
END
$$;

ALTER TABLE inbound_endpoints ADD CONSTRAINT inbound_endpoints_signature_secret
    CHECK (NOT require_signature OR secret_sealed IS NOT NULL OR verification IN ('hmac', 'basic'));
