//! Tables of the conversation module (append steps; every per-account table has an `account` column).

/// The conversation module's migrations.
pub(super) const STEPS: &[&str] = &[];
