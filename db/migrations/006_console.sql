-- The support console (docs/design.md#the-support-console): one-time sign-in links and
-- the sessions they become. Both are kept as SHA-256 of their tokens only,
-- and forgotten a day after they end (at each sign-in and sign-out).

-- A sign-in link printed by `commerce console login`: valid ten minutes,
-- used once.
CREATE TABLE console_links (
    token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    org_id      uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    user_id     uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);

-- A signed-in console user: the session cookie's token, hashed; twelve
-- hours from sign-in.
CREATE TABLE console_sessions (
    token_hash  bytea PRIMARY KEY CHECK (length(token_hash) = 32),
    org_id      uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    user_id     uuid NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    FOREIGN KEY (org_id, user_id) REFERENCES users (org_id, id) ON DELETE CASCADE
);
