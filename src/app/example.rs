//! The documented example configuration, built into the binary so `scv-bridge config example`
//! works after `cargo install` (the same file the configuration tests parse).

/// `config/example.toml`, every key documented.
pub const EXAMPLE: &str = include_str!("../../config/example.toml");
