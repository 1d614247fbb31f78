// Package postgres is weir's PostgreSQL connector: a CDC source and a
// sink in two modes.
//
// CDC (and CDCRows) is a source of the changes of a database's tables,
// read through a logical replication slot with the pgoutput plugin
// (github.com/jackc/pglogrepl): a consistent snapshot taken with the
// slot's exported snapshot, then every committed insert, update, delete
// and truncate as weir.Change values, transaction by transaction, with
// the slot's LSN in checkpoints and the slot acknowledged only when a
// checkpoint completes. CDCConfig carries Flink CDC's postgres-cdc option
// names (FromOptions). See docs/tables.md.
//
// The sink modes:
//
// Upsert writes each record as an idempotent upsert: the table stores, with
// each row, the position (window end, sequence number, source offset) of
// the last update applied, and an update whose position is not greater is
// skipped. The job delivers records at least once (it replays the records
// since the last checkpoint after a failure); the writes being idempotent,
// the table ends up as if each record had been written once. Rows are
// visible as soon as they are flushed. UpsertChanges is Upsert for
// changelogs: it deletes on retraction.
//
// Transactional is a two-phase-commit sink (weir.CommittingSink): rows are
// staged in a staging table in PostgreSQL, and when a checkpoint completes,
// one transaction per sink subtask moves its rows of that checkpoint to the
// target table and records the commit in a bookkeeping table, so that a
// commit repeated after a crash is skipped. Rows become visible when their
// checkpoint completes; appends are exactly once.
//
// Both use github.com/jackc/pgx/v5, one connection per sink subtask. The
// target table must exist; the sinks check its columns and keys when they
// open and fail with an error naming what does not match. See
// docs/postgres.md for the guarantees, and for how the tests run a
// throwaway server (scripts/postgres.sh).
package postgres
