//! Tables of the confirm module (append steps; every per-account table has an `account` column).

/// The confirm module's migrations.
pub(super) const STEPS: &[&str] = &[];
