//! Tables of the agent module (append steps; every per-account table has an `account` column).

/// The agent module's migrations.
pub(super) const STEPS: &[&str] = &[];
