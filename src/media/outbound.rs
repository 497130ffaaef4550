//! The files an answer names: Markdown images and links to relative paths, plus the paths the
//! backend handed back. Only a regular file inside the workspace (after resolving symlinks) is
//! sent; `..`, absolute paths and anything that resolves outside are refused by name.

use std::path::{Component, Path, PathBuf};

/// Why a named file is not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Absolute, with `..`, or resolving (through a symlink) outside the workspace.
    Outside,
    /// No such file (or not a regular file).
    Missing,
    /// The account has no workspace to send from.
    NoWorkspace,
}

/// One file to send: where it is (absolute, resolved) and the name the recipient sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToSend {
    /// The file, canonical, inside the workspace.
    pub path: PathBuf,
    /// Its file name.
    pub name: String,
}

/// What the answer named: files to send, in order, and refusals with the path as written.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Named {
    /// Files inside the workspace, each once.
    pub send: Vec<ToSend>,
    /// Paths not sent, as the answer wrote them, and why.
    pub refused: Vec<(String, Refusal)>,
}

/// The link targets of Markdown images and links in `text` that look like file paths (no URL
/// scheme, no `#anchor`), in order.
pub fn markdown_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(end) = after.find(')') else { break };
        // `[a](path "title")`: the target ends at the first space; `<path with spaces>` is kept.
        let raw = after[..end].trim();
        let target = match raw.strip_prefix('<') {
            Some(r) => r.split('>').next().unwrap_or_default(),
            None => raw.split_whitespace().next().unwrap_or_default(),
        };
        rest = &after[end + 1..];
        if target.is_empty() || target.starts_with('#') || target.contains("://") {
            continue;
        }
        if target.starts_with("mailto:") || target.starts_with("data:") {
            continue;
        }
        out.push(target.to_string());
    }
    out
}

/// Checks every path the answer named (`text`'s Markdown targets, then `files`) against
/// `workspace`.
pub fn named(text: &str, files: &[PathBuf], workspace: Option<&Path>) -> Named {
    // The answer's own links must be relative; a backend's attachment may name its file
    // absolutely, and is then sent only when it resolves inside the workspace.
    let mut wanted: Vec<(String, bool)> = markdown_targets(text)
        .into_iter()
        .map(|t| (t, false))
        .collect();
    wanted.extend(
        files
            .iter()
            .map(|p| (p.to_string_lossy().into_owned(), true)),
    );
    let mut found = Named::default();
    let root = workspace.and_then(|w| w.canonicalize().ok());
    for (raw, from_backend) in wanted {
        let verdict = match &root {
            None => Err(Refusal::NoWorkspace),
            Some(root) if from_backend && Path::new(&raw).is_absolute() => {
                inside(root, Path::new(&raw))
            }
            Some(root) => resolve(root, &raw),
        };
        match verdict {
            Ok(path) => {
                if !found.send.iter().any(|s| s.path == path) {
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    found.send.push(ToSend { path, name });
                }
            }
            Err(why) => {
                if !found.refused.iter().any(|(r, _)| *r == raw) {
                    found.refused.push((raw, why));
                }
            }
        }
    }
    found
}

/// `raw` (relative to the canonical `root`) as a canonical regular file inside `root`.
fn resolve(root: &Path, raw: &str) -> Result<PathBuf, Refusal> {
    let rel = Path::new(raw.strip_prefix("./").unwrap_or(raw));
    // Refused as written, before touching the file system: an absolute path or `..` is never
    // sent even when it happens to point back inside.
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(Refusal::Outside);
    }
    inside(root, &root.join(rel))
}

/// `path` resolved (symlinks followed) as a regular file inside the canonical `root`.
fn inside(root: &Path, path: &Path) -> Result<PathBuf, Refusal> {
    let real = path.canonicalize().map_err(|_| Refusal::Missing)?;
    if !real.starts_with(root) {
        return Err(Refusal::Outside);
    }
    if !real.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(Refusal::Missing);
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_images_and_links_to_paths_are_found_urls_are_not() {
        let text = "Here: ![chart](out/chart.png) and [report](<out/my report.pdf>) \
                    [site](https://x.org/a.png) [top](#top) [t](a.txt \"title\")";
        assert_eq!(
            markdown_targets(text),
            vec!["out/chart.png", "out/my report.pdf", "a.txt"]
        );
    }

    #[test]
    fn only_files_inside_the_workspace_are_sent() {
        let ws = tempfile::tempdir().expect("dir");
        let outside = tempfile::tempdir().expect("dir");
        std::fs::create_dir(ws.path().join("out")).expect("mkdir");
        std::fs::write(ws.path().join("out/chart.png"), b"png").expect("write");
        std::fs::write(outside.path().join("secret"), b"s").expect("write");
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("out/link"))
            .expect("link");
        let abs = outside.path().join("secret").to_string_lossy().into_owned();
        let text = format!(
            "![c](out/chart.png) ![c](./out/chart.png) [x](../x) [l](out/link) [a]({abs}) [m](gone.txt) [d](out)"
        );
        let got = named(&text, &[PathBuf::from("out/chart.png")], Some(ws.path()));
        assert_eq!(got.send.len(), 1, "{got:?}");
        assert_eq!(got.send[0].name, "chart.png");
        assert!(
            got.send[0]
                .path
                .starts_with(ws.path().canonicalize().expect("canon"))
        );
        assert_eq!(
            got.refused,
            vec![
                ("../x".to_string(), Refusal::Outside),
                ("out/link".to_string(), Refusal::Outside),
                (abs, Refusal::Outside),
                ("gone.txt".to_string(), Refusal::Missing),
                ("out".to_string(), Refusal::Missing),
            ]
        );
        let root = ws.path().canonicalize().expect("canon");
        let from_backend = named(
            "",
            &[root.join("out/chart.png"), outside.path().join("secret")],
            Some(ws.path()),
        );
        assert_eq!(from_backend.send.len(), 1);
        assert_eq!(from_backend.refused.len(), 1);
        assert_eq!(from_backend.refused[0].1, Refusal::Outside);
        let none = named("![c](out/chart.png)", &[], None);
        assert_eq!(
            none.refused,
            vec![("out/chart.png".into(), Refusal::NoWorkspace)]
        );
    }
}
