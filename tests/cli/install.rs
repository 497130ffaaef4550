//! Installing from a clone works as the README says: the install line builds the locked
//! dependencies (`--locked`: without it cargo resolves afresh and builds other versions), and
//! the declared `rust-version` is at least what those locked dependencies declare, so the
//! claim is true. Only one toolchain runs here, so the claim is checked against the
//! dependencies' own declarations (`cargo metadata`), not by building with the minimum.

use std::process::Command;

const README: &str = include_str!("../../README.md");
const README_ZH: &str = include_str!("../../README.zh-CN.md");
const MANIFEST: &str = include_str!("../../Cargo.toml");

/// `1.89` or `1.89.0` as comparable numbers.
fn version(v: &str) -> Vec<u64> {
    let mut parts: Vec<u64> = v.split('.').map(|p| p.parse().expect("a number")).collect();
    parts.resize(3, 0);
    parts
}

#[test]
fn the_readmes_install_the_locked_dependencies() {
    for (name, text) in [("README.md", README), ("README.zh-CN.md", README_ZH)] {
        assert!(
            text.contains("`cargo install --locked --path .`"),
            "{name}: the install line must be `cargo install --locked --path .`"
        );
        assert!(
            !text.contains("`cargo install --path .`"),
            "{name} still has the unlocked install line"
        );
    }
}

#[test]
fn the_declared_rust_version_covers_every_locked_dependency() {
    let manifest: toml::Table = toml::from_str(MANIFEST).expect("Cargo.toml");
    let declared = manifest["workspace"]["package"]["rust-version"]
        .as_str()
        .expect("workspace.package.rust-version");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|m| m.as_str())
        .collect();
    let needed = meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| !members.contains(&p["id"].as_str().unwrap_or_default()))
        .filter_map(|p| {
            let v = p["rust_version"].as_str()?;
            let (name, release) = (p["name"].as_str()?, p["version"].as_str()?);
            Some((version(v), format!("{name} {release} needs {v}")))
        })
        .max()
        .expect("some dependency declares a rust-version");
    assert!(
        version(declared) >= needed.0,
        "rust-version = \"{declared}\" in Cargo.toml is lower than the locked dependencies need: {}; raise it",
        needed.1
    );
}
