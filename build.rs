//! Puts the commit the binary was built from into `SCV_BRIDGE_COMMIT` (for `--version`): the
//! variable of that name when set (a build without `.git`, e.g. the Docker image), else
//! `git rev-parse`, else "unknown".

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=SCV_BRIDGE_COMMIT");
    let commit = std::env::var("SCV_BRIDGE_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=SCV_BRIDGE_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a checkout) and the branch it names (a commit).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
    }
    if let (Some(common), Some(branch)) = (
        git(&["rev-parse", "--git-common-dir"]),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        println!("cargo:rerun-if-changed={common}/{branch}");
        println!("cargo:rerun-if-changed={common}/packed-refs");
    }
}
