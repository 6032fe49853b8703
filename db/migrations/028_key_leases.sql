-- How many calls the last take from a bucket granted: an API process takes
-- a lease of several calls of a key's limit at once and spends them without
-- a write each (db/keylease.go). A take of one call grants 1 or 0.
-- Adding a column with a constant default rewrites nothing.
ALTER TABLE rate_limits ADD COLUMN IF NOT EXISTS granted integer NOT NULL DEFAULT 1;

-- An API process keeps what authenticating a key read (the key, its scopes,
-- its organisation's add-ons) for a few seconds (db/keycache.go). Every
-- change to what it keeps is announced on commerce_key_changes, so that
-- every process drops what it kept at once, whoever made the change.
CREATE OR REPLACE FUNCTION commerce_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('commerce_key_changes', '');
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS api_keys_changed ON api_keys;
CREATE TRIGGER api_keys_changed AFTER UPDATE OF key_hash, scopes, revoked_at, org_id OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION commerce_key_changed();

DROP TRIGGER IF EXISTS organisations_addons_changed ON organisations;
CREATE TRIGGER organisations_addons_changed AFTER UPDATE OF addon_stock, addon_route, addon_source OR DELETE ON organisations
    FOR EACH STATEMENT EXECUTE FUNCTION commerce_key_changed();
