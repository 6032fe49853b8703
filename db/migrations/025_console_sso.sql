-- Console sign-in through an organisation's OpenID Connect provider
-- (docs/console.md#signing-in-with-your-identity-provider): the provider of
-- each organisation, the email domains that lead to it, the sign-ins under
-- way, and sessions that end after an hour idle and can be listed and
-- ended one by one. Users can be disabled.

-- An organisation's provider. The client secret is sealed with
-- COMMERCE_SECRET_KEY, bound to the row (org_sso, org_id).
CREATE TABLE org_sso (
    org_id         uuid PRIMARY KEY REFERENCES organisations (id) ON DELETE CASCADE,
    issuer         text NOT NULL,
    client_id      text NOT NULL,
    client_secret  bytea NOT NULL,
    -- The claim of the ID token holding the user's groups or roles, and the
    -- values of it that make an owner or an admin; anyone else is a member,
    -- or is refused when unmatched = 'refuse'.
    role_claim     text NOT NULL DEFAULT '',
    owner_values   text[] NOT NULL DEFAULT '{}',
    admin_values   text[] NOT NULL DEFAULT '{}',
    unmatched      text NOT NULL DEFAULT 'member' CHECK (unmatched IN ('member', 'refuse')),
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- The email domains whose users sign in through an organisation's provider:
-- a domain belongs to one organisation at most.
CREATE TABLE org_sso_domains (
    domain  text PRIMARY KEY CHECK (domain = lower(domain) AND domain <> ''),
    org_id  uuid NOT NULL REFERENCES org_sso (org_id) ON DELETE CASCADE
);
CREATE INDEX org_sso_domains_org ON org_sso_domains (org_id);

-- A sign-in sent to the provider and not yet back: the state parameter,
-- hashed; the hash of the browser's own cookie that the PKCE verifier is
-- derived from; the nonce the ID token must carry. Used once, within ten
-- minutes.
CREATE TABLE console_sso_states (
    state_hash   bytea PRIMARY KEY CHECK (length(state_hash) = 32),
    binder_hash  bytea NOT NULL CHECK (length(binder_hash) = 32),
    org_id       uuid NOT NULL REFERENCES organisations (id) ON DELETE CASCADE,
    email        text NOT NULL,
    nonce        text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    used_at      timestamptz
);

-- Sessions get an id to be named by (the token hash is not shown), the time
-- they were last used (kept to the minute), and how they began.
ALTER TABLE console_sessions
    ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid(),
    ADD COLUMN last_seen_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN via text NOT NULL DEFAULT 'link' CHECK (via IN ('link', 'sso'));
CREATE UNIQUE INDEX console_sessions_id ON console_sessions (id);
CREATE INDEX console_sessions_user ON console_sessions (org_id, user_id);

-- A disabled user signs in neither way and has no sessions.
ALTER TABLE users ADD COLUMN disabled_at timestamptz;
