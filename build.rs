//! Puts the commit the binary was built from into `SCV_BRIDGE_COMMIT` (for `--version`): the
//! variable of that name when set (a build without `.git`, e.g. the Docker image), else
//! `git rev-parse`, else "unknown".

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    pack_relative_relocations();
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

/// Links the binary with its relative relocations packed (`DT_RELR`) where the linker and the C
/// library take them (binutils 2.38, glibc 2.36 and later). The position-independent binary
/// carries tens of thousands of them: unpacked, a table the loader reads at every start and
/// that stays resident; packed, a small fraction of it. Tried by linking and running a probe, so a linker that
/// ignores the option (with a warning), a C library without it, or a cross build keeps the
/// plain format and the build never fails for it.
fn pack_relative_relocations() {
    const FLAG: &str = "-Wl,-z,pack-relative-relocs";
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    if env("TARGET") != env("HOST") || !env("TARGET").contains("linux-gnu") {
        return;
    }
    let out = PathBuf::from(env("OUT_DIR"));
    let (src, bin) = (out.join("relr-probe.c"), out.join("relr-probe"));
    if std::fs::write(&src, "int main(void) { return 0; }\n").is_err() {
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let linked = Command::new(cc)
        .args(["-fPIE", "-pie", FLAG, "-Wl,--fatal-warnings", "-o"])
        .arg(&bin)
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success());
    if linked && Command::new(&bin).status().is_ok_and(|s| s.success()) {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    }
    println!("cargo:rerun-if-env-changed=CC");
}
