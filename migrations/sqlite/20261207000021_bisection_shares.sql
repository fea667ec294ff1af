-- Share links of bisections: a link opens the bisection's page and the pages of its steps' experiments
-- (never their logs or files). Stored as a hash like every token; revoked or expired links stay for the audit.
CREATE TABLE bisection_shares (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    bisection_id INTEGER NOT NULL REFERENCES bisections(id) ON DELETE CASCADE,
    token_hash   TEXT    NOT NULL UNIQUE,
    created_by   INTEGER REFERENCES users(id) ON DELETE SET NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX bisection_shares_bisection ON bisection_shares (bisection_id);
