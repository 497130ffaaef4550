//! The deploy files stay sound: the Docker image is pinned, health-checked, reaps children and
//! caches its dependency layer for every workspace crate and bench; the systemd units verify and
//! stay hardened (`systemd-analyze`, where this machine has it). No container engine runs here,
//! so the image itself is not built by the tests.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

#[test]
fn the_image_is_pinned_health_checked_and_reaps_children() {
    let docker = read("deploy/Dockerfile");
    let froms: Vec<&str> = docker
        .lines()
        .filter_map(|l| l.strip_prefix("FROM "))
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(froms.len(), 2, "{froms:?}");
    for image in froms {
        let tag = image.split_once(':').map(|(_, t)| t).unwrap_or("");
        // An exact release: digits and dots up to the first '-', at least "12.11".
        let version = tag.split('-').next().unwrap_or("");
        assert!(
            version.split('.').count() >= 2
                && version
                    .split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())),
            "{image} is not pinned to a release"
        );
    }
    assert!(
        docker.contains("HEALTHCHECK") && docker.contains("\"status\", \"--quiet\"]"),
        "{docker}"
    );
    assert!(
        docker.contains("ENTRYPOINT [\"/usr/bin/tini\", \"--\""),
        "{docker}"
    );
    assert!(!docker.contains("API_KEY"), "no key in the image");
    let ignore = read(".dockerignore");
    assert!(ignore.lines().any(|l| l.trim() == "target/"), "{ignore}");
    assert!(ignore.lines().any(|l| l.trim() == ".git/"), "{ignore}");
}

#[test]
fn the_dependency_layer_stands_in_for_every_crate_and_bench() {
    let docker = read("deploy/Dockerfile");
    let manifest = read("Cargo.toml");
    let deps_layer = &docker[..docker.find("COPY . .").expect("the sources are copied")];
    let members: Vec<String> = manifest
        .lines()
        .find_map(|l| l.strip_prefix("members = "))
        .expect("workspace members")
        .trim_matches(['[', ']'])
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| m != ".")
        .collect();
    for m in &members {
        assert!(
            deps_layer.contains(&format!("COPY {m}/Cargo.toml {m}/")),
            "the dependency layer lacks {m}'s manifest"
        );
        assert!(
            deps_layer.contains(&format!("{m}/src/lib.rs")),
            "no stand-in for {m}"
        );
    }
    let mut lines = manifest.lines();
    let mut benches = Vec::new();
    while let Some(l) = lines.next() {
        if l.trim() == "[[bench]]"
            && let Some(name) = lines.next().and_then(|n| n.strip_prefix("name = "))
        {
            benches.push(name.trim_matches('"').to_string());
        }
    }
    assert!(!benches.is_empty());
    let stand_ins = deps_layer
        .lines()
        .find_map(|l| l.trim().strip_prefix("&& for b in "))
        .and_then(|l| l.split_once(';'))
        .map(|(names, _)| {
            names
                .split_whitespace()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .expect("the bench stand-ins");
    let mut want = benches.clone();
    want.sort();
    let mut have = stand_ins;
    have.sort();
    assert_eq!(
        have, want,
        "every [[bench]] needs a stand-in in deploy/Dockerfile"
    );
}

/// The unit with its binary path pointed at the built binary, in a temporary directory.
fn unit_copy(name: &str, from: &str, dir: &Path) -> PathBuf {
    let text = read(&format!("deploy/{name}")).replace(from, BIN);
    let path = dir.join(name.replace(".user", ""));
    std::fs::write(&path, text).expect("write unit");
    path
}

fn exposure(out: &std::process::Output) -> f64 {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    all.lines()
        .find_map(|l| l.split_once("Overall exposure level for ").map(|(_, r)| r))
        .and_then(|r| r.split_once(": "))
        .and_then(|(_, r)| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no exposure level in:\n{all}"))
}

#[test]
fn the_units_verify_and_stay_hardened() {
    if Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("systemd-analyze is not installed here: the units were not analysed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    std::fs::create_dir(&run).expect("runtime dir");
    let system = unit_copy(
        "scv-bridge.service",
        "/usr/local/bin/scv-bridge",
        dir.path(),
    );
    let user_dir = dir.path().join("user");
    std::fs::create_dir(&user_dir).expect("dir");
    let user = unit_copy(
        "scv-bridge.user.service",
        "%h/.cargo/bin/scv-bridge",
        &user_dir,
    );
    let analyze = |args: &[&str], unit: &Path| {
        Command::new("systemd-analyze")
            .args(args)
            .arg(unit)
            .env("XDG_RUNTIME_DIR", &run)
            .output()
            .expect("systemd-analyze")
    };
    for (args, unit) in [
        (&["verify"][..], &system),
        (&["verify", "--user"][..], &user),
    ] {
        let out = analyze(args, unit);
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{args:?} {}: {}",
            unit.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let s = exposure(&analyze(&["security", "--offline=true"], &system));
    assert!(s <= 2.0, "the system unit's exposure is {s}, above 2.0");
    let u = exposure(&analyze(&["security", "--offline=true", "--user"], &user));
    assert!(u <= 3.0, "the user unit's exposure is {u}, above 3.0");
}

#[test]
fn the_units_documentation_is_installed_by_the_deploy_steps() {
    let readme = read("deploy/README.md");
    for (unit, installed) in [
        ("deploy/scv-bridge.service", "/usr/share/doc/scv-bridge/"),
        (
            "deploy/scv-bridge.user.service",
            "~/.local/share/doc/scv-bridge/",
        ),
    ] {
        let text = read(unit);
        let doc = text
            .lines()
            .find_map(|l| l.strip_prefix("Documentation="))
            .unwrap_or_else(|| panic!("{unit} has no Documentation="));
        assert!(doc.ends_with("scv-bridge/README.md"), "{unit}: {doc}");
        assert!(
            readme.contains(&format!("install -Dm0644 README.md {installed}README.md")),
            "deploy/README.md must install the README that {unit} links ({installed})"
        );
    }
}
