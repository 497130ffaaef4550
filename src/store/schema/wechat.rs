//! Tables of the wechat module (append steps; every per-account table has an `account` column).

/// The wechat module's migrations.
pub(super) const STEPS: &[&str] = &[];
