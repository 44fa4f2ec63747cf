//! The PostgreSQL schema: `schema-postgres.sql` applied to an empty database, migrations for
//! one made by an older hookbin, and the version in a `schema_version` table.
//!
//! Everything runs in one transaction under [`MIGRATION_LOCK`] (an advisory lock): nodes that
//! start together wait for each other, and the first one migrates. A failed step leaves the
//! database at the previous version, whole.

use deadpool_postgres::Pool;

use super::{MIGRATION_LOCK, db_error, pool_error};
use crate::storage::StoreError;

/// The top-level `schema-postgres.sql`, compiled in so that one binary deploys.
pub const SCHEMA_SQL: &str = include_str!("../../../schema-postgres.sql");
/// The `schema_version` of a database made by this binary.
pub const SCHEMA_VERSION: i32 = 2;

/// One step up, from version `to - 1` to `to`. A step is history: never edited once released.
struct Migration {
    to: i32,
    sql: &'static str,
}

/// Every upgrade, oldest first; the last one reaches [`SCHEMA_VERSION`] (version 1 is the first
/// PostgreSQL schema).
const MIGRATIONS: &[Migration] = &[
    // 2: no foreign key from bin_requests to bins: its per-row check cost more than the rest of
    // an insert; deleting a bin deletes its requests in code (see schema-postgres.sql).
    Migration {
        to: 2,
        sql: "ALTER TABLE bin_requests DROP CONSTRAINT IF EXISTS bin_requests_bin_id_fkey",
    },
];

/// Brings the database to [`SCHEMA_VERSION`].
pub async fn migrate(pool: &Pool) -> Result<(), StoreError> {
    let mut client = pool.get().await.map_err(pool_error)?;
    let tx = client.transaction().await.map_err(db_error)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(db_error)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL)")
        .await
        .map_err(db_error)?;
    let version: Option<i32> = tx
        .query_opt("SELECT max(version) FROM schema_version", &[])
        .await
        .map_err(db_error)?
        .and_then(|row| row.get(0));
    match version {
        None => {
            tx.batch_execute(SCHEMA_SQL).await.map_err(db_error)?;
            tx.execute(
                "INSERT INTO schema_version (version) VALUES ($1)",
                &[&SCHEMA_VERSION],
            )
            .await
            .map_err(db_error)?;
            tracing::info!(version = SCHEMA_VERSION, "created the PostgreSQL schema");
        }
        Some(v) if v > SCHEMA_VERSION => {
            return Err(StoreError::Schema(format!(
                "the database is at schema version {v}, newer than this hookbin's \
                 {SCHEMA_VERSION}: run a newer hookbin"
            )));
        }
        Some(v) => {
            for step in MIGRATIONS.iter().filter(|m| m.to > v) {
                tx.batch_execute(step.sql).await.map_err(db_error)?;
                tx.execute("UPDATE schema_version SET version = $1", &[&step.to])
                    .await
                    .map_err(db_error)?;
                tracing::info!(version = step.to, "migrated the PostgreSQL schema");
            }
        }
    }
    tx.commit().await.map_err(db_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_in_order_and_reach_the_current_version() {
        for (i, step) in MIGRATIONS.iter().enumerate() {
            assert_eq!(step.to, i as i32 + 2);
        }
        assert_eq!(MIGRATIONS.last().map_or(1, |m| m.to), SCHEMA_VERSION);
    }
}
