package storage

// Named SQL shared by both dialects, with "?" placeholders (rebound per
// dialect). Keeping them in one place makes it easy to see every query the
// store can run, and to name them in errors.
const (
	selectMeta = `SELECT revision, compact_revision FROM meta WHERE id = 1`

	// kv holds each live key's revisions; its value is stored once, in the
	// history row of its newest revision (history's primary key), which
	// trimming never removes (compact.go). Current state is read joined:
	// one index range over kv, then a primary-key lookup per row. CROSS
	// JOIN keeps kv as SQLite's outer loop; PostgreSQL plans it as any
	// inner join.
	currentColumns = `kv.key, h.value, kv.create_revision, kv.mod_revision, kv.version, kv.expires_at`
	selectCurrent  = `SELECT ` + currentColumns + ` FROM kv CROSS JOIN history h WHERE h.revision = kv.mod_revision`

	// kvColumns are what a write stores in kv.
	kvColumns = `key, create_revision, mod_revision, version, expires_at`

	getCurrent = selectCurrent + ` AND kv.key = ?`

	// listCurrentFrom / listCurrentAfter read one index range of the current
	// state. The *Unchanged variants keep only keys not written after the
	// list's revision (used when the list is pinned to an older revision).
	listCurrentFrom           = selectCurrent + ` AND kv.key >= ? AND kv.key < ? ORDER BY kv.key LIMIT ?`
	listCurrentAfter          = selectCurrent + ` AND kv.key > ? AND kv.key < ? ORDER BY kv.key LIMIT ?`
	listCurrentFromUnchanged  = selectCurrent + ` AND kv.key >= ? AND kv.key < ? AND kv.mod_revision <= ? ORDER BY kv.key LIMIT ?`
	listCurrentAfterUnchanged = selectCurrent + ` AND kv.key > ? AND kv.key < ? AND kv.mod_revision <= ? ORDER BY kv.key LIMIT ?`

	// keysChangedSince lists the keys in a range written after a revision.
	keysChangedSince = `SELECT DISTINCT key FROM history WHERE revision > ? AND key >= ? AND key < ?`

	// historyAtOrBefore is a key's newest history row at or before a revision.
	historyAtOrBefore = `SELECT op, value, create_revision, revision, version, expires_at FROM history
		WHERE key = ? AND revision <= ? ORDER BY revision DESC LIMIT 1`

	// readEvents reads history rows with the value each replaced. Revisions
	// are dense and commit in order, so "revision > ?" never skips a write
	// that commits later.
	readEvents = `SELECT h.revision, h.key, h.op, h.value, h.create_revision, h.version, h.expires_at, h.prev_revision,
		p.value, p.create_revision, p.version, p.expires_at
		FROM history h LEFT JOIN history p ON p.revision = h.prev_revision
		WHERE h.revision > ? AND h.revision <= ? AND h.key >= ? AND h.key < ?
		ORDER BY h.revision LIMIT ?`

	updateMetaRevision = `UPDATE meta SET revision = ? WHERE id = 1`

	expiredKeys = `SELECT key, mod_revision FROM kv WHERE expires_at IS NOT NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?`
)
