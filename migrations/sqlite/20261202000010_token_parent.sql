-- A token made by a request that was itself authenticated by a token records that parent: it expires no
-- later than its parent and stops working when its parent is revoked or expires.
ALTER TABLE api_tokens ADD COLUMN parent_id INTEGER REFERENCES api_tokens(id) ON DELETE CASCADE;
