-- How many calls the last take from a bucket granted: an API process takes
-- a lease of several calls of a key's limit at once and spends them without
-- a write each (db/keylease.go). A take of one call grants 1 or 0.
-- Adding a column with a constant default rewrites nothing.
ALTER TABLE rate_limits ADD COLUMN IF NOT EXISTS granted integer NOT NULL DEFAULT 1;
