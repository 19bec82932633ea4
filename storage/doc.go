// Package storage is skiff's revisioned key-value store: the only place cluster
// state lives. It keeps Kubernetes-style keys (/registry/<resource>/<ns>/<name>)
// in SQL — an embedded SQLite file or a shared PostgreSQL database — behind one
// code path, with the differences between the two confined to a Dialect.
//
// Layout of the data (migrations/ holds the only copy of the schema):
//
//   - kv: the current state, one row per live key with its newest revision.
//     Get and List read one index range of it and fetch each key's value from
//     the history row of that revision by primary key (plus, for a list pinned
//     to an older revision, the few history rows written after it), so lists
//     never scan history.
//   - history: one row per revision — create, update or delete — with the new
//     value, the revision it replaced, who made it and when. Watches are served
//     from it, and it is what an auditor queries with SQL. A value is stored
//     only here: trimming never removes a live key's newest row (compact.go).
//   - meta: one row holding the newest revision and the compaction floor.
//
// Revision order is commit order by construction: every write transaction
// first locks the single meta row, then reads the current revision, assigns
// the next ones and commits them while still holding that lock. Two writers can
// therefore never hold overlapping revision ranges, and the writer with the
// smaller revisions has committed before the next one could even read the
// counter. Revisions are dense (no holes) and become visible in order, so a
// reader that sees revision N sees everything below N, and a watch poller can
// read "revision > last" without gap detection or time-based skipping.
//
// Writes are grouped: one writer goroutine per process drains the queue of
// pending operations into a single transaction (group commit), so sixteen
// concurrent API writes cost one commit, one fsync and one lock of meta.
//
// Watches: one hub per process keeps the newest revision it has dispatched and
// fans events out to every watcher. It is woken by local commits at once, by
// PostgreSQL LISTEN/NOTIFY for commits of other processes, and by a polling
// ticker for anything a notification missed. A watcher that falls more than
// Config.WatchBuffer events behind is taken off the live stream and, when it
// reads again, catches up from the ring or history like a new watch (etcd's
// unsynced watchers); only a watcher behind the compaction floor is closed
// with ErrCompacted, which clients recover from by listing again. A
// watcher may name a WatchTrigger (pods by node, as Kubernetes' watch cache
// indexes them): the hub computes the trigger's value of each event once and
// hands it only to the watchers wanting that value. A watcher has no
// goroutine: the hub queues its events and its consumer takes them with
// Watch.Next, all that are ready at once (Events is a channel adapter).
//
// Lists at the newest revision are served from memory: the hub also keeps a
// mirror of the current state (listcache.go), and a list reads only the
// database's revision, waits for the mirror to reach it and answers from the
// mirror — linearizable across servers, and bounded by Config.ListCacheBytes.
package storage
