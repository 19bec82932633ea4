-- +goose Up
-- A key's current value is stored once: in the history row of its newest
-- revision, which trimming never removes (storage/compact.go). kv keeps the
-- key's revisions and TTL, and reads join the two. Until now every write
-- stored its value twice (kv and history).
--
-- Trimming leaves every live key its newest history row, so none should be
-- missing; one lost to hand editing is recreated from kv before kv's values
-- are dropped.
INSERT INTO history (revision, key, op, value, create_revision, prev_revision, version, expires_at, actor, at)
SELECT kv.mod_revision, kv.key, CASE WHEN kv.version = 1 THEN 'create' ELSE 'update' END, kv.value,
       kv.create_revision, 0, kv.version, kv.expires_at, 'system:skiff:migration', now()
FROM kv
WHERE NOT EXISTS (SELECT 1 FROM history h WHERE h.revision = kv.mod_revision);

ALTER TABLE kv DROP COLUMN value;

-- +goose Down
ALTER TABLE kv ADD COLUMN value BYTEA;
UPDATE kv SET value = h.value FROM history h WHERE h.revision = kv.mod_revision;
ALTER TABLE kv ALTER COLUMN value SET NOT NULL;
