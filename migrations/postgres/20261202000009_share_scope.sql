-- A share link opens the page, its charts and its reports; trial logs and other experiment files only
-- when it was made with that scope (`files`). A link may expire (`expires_at`, epoch ms; NULL: never).
ALTER TABLE share_tokens ADD COLUMN files BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE share_tokens ADD COLUMN expires_at BIGINT;
