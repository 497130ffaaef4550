//! Tables of the feishu module (append steps; every per-account table has an `account` column).

/// The feishu module's migrations.
pub(super) const STEPS: &[&str] = &[];
