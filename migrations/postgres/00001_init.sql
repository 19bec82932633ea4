-- +goose Up
-- meta holds the newest revision and the compaction floor in one row. Every
-- write transaction locks this row first (SELECT ... FOR UPDATE); that lock is
-- what makes revision order equal commit order across several skiff servers
-- (see storage/doc.go).
CREATE TABLE meta (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    revision         BIGINT NOT NULL,
    compact_revision BIGINT NOT NULL,
    -- history rows up to here have been considered for trimming (see storage/compact.go)
    trimmed_revision BIGINT NOT NULL
);
INSERT INTO meta (id, revision, compact_revision, trimmed_revision) VALUES (1, 0, 0, 0);

-- Keys use the "C" collation so that range scans (prefix lists, pagination)
-- follow byte order whatever the database's locale.
CREATE TABLE kv (
    key             TEXT COLLATE "C" PRIMARY KEY,
    value           BYTEA NOT NULL,
    create_revision BIGINT NOT NULL,
    mod_revision    BIGINT NOT NULL,
    version         BIGINT NOT NULL,
    expires_at      BIGINT             -- unix milliseconds; NULL = no TTL
);
CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE history (
    revision        BIGINT PRIMARY KEY,
    key             TEXT COLLATE "C" NOT NULL,
    op              TEXT NOT NULL CHECK (op IN ('create', 'update', 'delete')),
    value           BYTEA,             -- NULL for delete
    create_revision BIGINT NOT NULL,
    prev_revision   BIGINT NOT NULL,   -- the revision this one replaced; 0 for create
    version         BIGINT NOT NULL,
    expires_at      BIGINT,
    actor           TEXT NOT NULL,     -- the authenticated user who made the change
    at              TIMESTAMPTZ NOT NULL
);
CREATE INDEX history_key_revision ON history (key, revision);

-- +goose Down
DROP TABLE history;
DROP TABLE kv;
DROP TABLE meta;
