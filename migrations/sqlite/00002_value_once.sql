-- +goose Up
-- A key's current value is stored once: in the history row of its newest
-- revision, which trimming never removes (storage/compact.go). kv keeps the
-- key's revisions and TTL, and reads join the two. Until now every write
-- stored its value twice (kv and history): twice the bytes through the WAL
-- and twice the file for the live objects.
--
-- Trimming leaves every live key its newest history row, so none should be
-- missing; one lost to hand editing is recreated from kv before kv's values
-- are dropped.
INSERT INTO history (revision, key, op, value, create_revision, prev_revision, version, expires_at, actor, at)
SELECT kv.mod_revision, kv.key, CASE WHEN kv.version = 1 THEN 'create' ELSE 'update' END, kv.value,
       kv.create_revision, 0, kv.version, kv.expires_at, 'system:skiff:migration',
       strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000000Z'
FROM kv
WHERE NOT EXISTS (SELECT 1 FROM history h WHERE h.revision = kv.mod_revision);

-- Without values kv's rows are small: keyed by the key itself (WITHOUT
-- ROWID) it is one b-tree instead of a table and a unique index.
CREATE TABLE kv_keys (
    key             TEXT NOT NULL PRIMARY KEY,
    create_revision INTEGER NOT NULL,
    mod_revision    INTEGER NOT NULL,
    version         INTEGER NOT NULL,
    expires_at      INTEGER            -- unix milliseconds; NULL = no TTL
) WITHOUT ROWID;
INSERT INTO kv_keys (key, create_revision, mod_revision, version, expires_at)
SELECT key, create_revision, mod_revision, version, expires_at FROM kv;
DROP TABLE kv;
ALTER TABLE kv_keys RENAME TO kv;
CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;

-- +goose Down
CREATE TABLE kv_values (
    id              INTEGER PRIMARY KEY,
    key             TEXT NOT NULL UNIQUE,
    value           BLOB NOT NULL,
    create_revision INTEGER NOT NULL,
    mod_revision    INTEGER NOT NULL,
    version         INTEGER NOT NULL,
    expires_at      INTEGER
);
INSERT INTO kv_values (key, value, create_revision, mod_revision, version, expires_at)
SELECT kv.key, h.value, kv.create_revision, kv.mod_revision, kv.version, kv.expires_at
FROM kv JOIN history h ON h.revision = kv.mod_revision;
DROP TABLE kv;
ALTER TABLE kv_values RENAME TO kv;
CREATE INDEX kv_expires_at ON kv (expires_at) WHERE expires_at IS NOT NULL;
