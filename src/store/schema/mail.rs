//! Tables of the mail module (append steps; every per-account table has an `account` column).

/// The mail module's migrations.
pub(super) const STEPS: &[&str] = &[];
