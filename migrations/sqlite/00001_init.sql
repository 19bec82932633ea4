-- +goose Up
-- meta holds the newest revision and the compaction floor in one row. Every
-- write transaction locks this row first; that lock is what makes revision
-- order equal commit order (see storage/doc.go).
CREATE TABLE meta (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    revision         INTEGER NOT NULL,
    compact_revision INTEGER NOT NULL,
    -- history rows up to here have been considered for trimming (see storage/compact.go)
    trimmed_revision INTEGER NOT NULL
);
INSERT INTO meta (id, revision, compact_revision, trimmed_revision) VALUES (1, 0, 0, 0);

-- kv is the current state: one row per live key. Get and List read only this.
-- A rowid table (not WITHOUT ROWID): values are whole objects, kilobytes each,
-- and SQLite keeps large rows far better in a rowid b-tree, with the keys in
-- their own small index.
CREATE TABLE kv (
    id              INTEGER PRIMARY KEY,
    key             TEXT NOT NULL UNIQUE,
    value           BLOB NOT NULL,
    create_revision INTEGER NOT NULL,
    mod_revision    INTEGER NOT NULL,
    version         INTEGER NOT NULL,
    expires_at      INTEGER            -- unix milliseconds; NULL = no TTL
);
CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;

-- history: one row per revision. Watches read it; auditors query it.
CREATE TABLE history (
    revision        INTEGER PRIMARY KEY,
    key             TEXT NOT NULL,
    op              TEXT NOT NULL CHECK (op IN ('create', 'update', 'delete')),
    value           BLOB,              -- NULL for delete
    create_revision INTEGER NOT NULL,
    prev_revision   INTEGER NOT NULL,  -- the revision this one replaced; 0 for create
    version         INTEGER NOT NULL,
    expires_at      INTEGER,
    actor           TEXT NOT NULL,     -- the authenticated user who made the change
    at              TEXT NOT NULL      -- UTC, RFC 3339 with nanoseconds
);
CREATE INDEX history_key_revision ON history (key, revision);

-- +goose Down
DROP TABLE history;
DROP TABLE kv;
DROP TABLE meta;
