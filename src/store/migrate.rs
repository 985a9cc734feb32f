//! Migrations: the rule written once, over a small trait each driver implements (as sqlx
//! writes its migrator once over its `Migrate` trait).
//!
//! The rule: a store at this dshq's newest version is left alone (one read, no DDL, so a
//! role that may only read and write rows connects); a store from a newer dshq is refused
//! ([`Error::SchemaTooNew`]); otherwise every migration newer than the recorded version is
//! applied in order and recorded in `schema_migrations`. How a driver makes that safe
//! beside other processes is its own: SQLite applies each migration in a `BEGIN IMMEDIATE`
//! transaction and checks again inside it; PostgreSQL runs the whole walk in one
//! transaction under an advisory lock (its DDL is transactional).

use crate::error::{Error, Result};

/// One migration: its version, its name, its SQL.
pub type Migration = (i64, &'static str, &'static str);

/// What a driver offers the migration rule.
pub trait Migrator {
    /// The highest recorded version (0 for an empty database, table or not).
    fn recorded_version(&mut self) -> Result<i64>;

    /// Create `schema_migrations` if it is not there.
    fn create_version_table(&mut self) -> Result<()>;

    /// Apply migration `m` and record it, unless another process recorded it meanwhile.
    fn apply(&mut self, m: Migration) -> Result<()>;
}

/// Bring the store up to the newest of `migrations`; the version it is at afterwards.
pub fn migrate(db: &mut dyn Migrator, migrations: &[Migration]) -> Result<i64> {
    let known = migrations.last().map(|m| m.0).unwrap_or(0);
    // The common case, a store at this version: one read and nothing else (every CLI
    // command opens the store).
    if db.recorded_version().is_ok_and(|v| v == known) {
        return Ok(known);
    }
    db.create_version_table()?;
    let current = db.recorded_version()?;
    if current > known {
        return Err(Error::SchemaTooNew {
            found: current,
            known,
        });
    }
    for &m in migrations.iter().filter(|m| m.0 > current) {
        db.apply(m)?;
    }
    Ok(known.max(current))
}
