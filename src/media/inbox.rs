//! The workspace inbox: `<workspace>/inbox/<YYYY-MM-DD>/` for the owner's files, and
//! `.../from-<sender>/` below it for anyone else's (`senders = "anyone"`), so a stranger's file
//! never lands beside the owner's; and how much the inbox already holds.

use std::path::{Path, PathBuf};

/// The inbox folder's name inside a workspace.
pub const INBOX: &str = "inbox";

/// The folder a message's files go to: its day (UTC, from the message's own time, so a re-run
/// after a crash picks the same folder) and, for a sender who is not the owner, a per-sender
/// folder below it.
pub fn folder(workspace: &Path, at_unix_ms: u64, stranger: Option<&str>) -> PathBuf {
    let day = chrono::DateTime::from_timestamp_millis(i64::try_from(at_unix_ms).unwrap_or(0))
        .unwrap_or_default()
        .format("%Y-%m-%d")
        .to_string();
    let mut dir = workspace.join(INBOX).join(day);
    if let Some(sender) = stranger {
        let safe = super::names::safe_name(Some(sender), "unknown");
        dir.push(format!("from-{safe}"));
    }
    dir
}

/// Bytes the inbox of `workspace` holds (files only; symlinks are not followed, so a link to a
/// large file outside does not count and cannot be used to read it).
pub fn usage(workspace: &Path) -> u64 {
    let mut total = 0u64;
    let mut stack = vec![workspace.join(INBOX)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(e.path());
            } else if meta.is_file() {
                total = total.saturating_add(meta.len());
            }
        }
    }
    total
}

/// Where a download is written before it is renamed into place: a hidden name in the same
/// folder (the rename is then atomic), fixed per final name so a re-run overwrites a leftover.
pub fn partial(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.part"))
}

/// Whether `name` is one of [`partial`]'s names.
fn is_partial(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".part") && name.len() > ".part".len() + 1
}

/// Removes the partial downloads below the inbox of `workspace` last written before `before`
/// (a crash left them: every download of a running daemon writes after the daemon started);
/// returns how many went. Symlinks are not followed, so nothing outside the inbox is touched.
pub fn sweep_partials(workspace: &Path, before: std::time::SystemTime) -> usize {
    let mut swept = 0;
    let mut stack = vec![workspace.join(INBOX)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(meta) = e.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(e.path());
                continue;
            }
            let stale = meta.modified().is_ok_and(|m| m < before);
            if meta.is_file()
                && stale
                && is_partial(&e.file_name().to_string_lossy())
                && std::fs::remove_file(e.path()).is_ok()
            {
                swept += 1;
            }
        }
    }
    swept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_owner_and_strangers_get_separate_folders_by_day() {
        let ws = Path::new("/w");
        // 2026-12-01T10:00:00Z
        let at = 1_796_119_200_000;
        assert_eq!(folder(ws, at, None), Path::new("/w/inbox/2026-12-01"));
        assert_eq!(
            folder(ws, at, Some("../x@im.wechat")),
            Path::new("/w/inbox/2026-12-01/from-x@im.wechat")
        );
    }

    #[test]
    fn usage_counts_files_below_the_inbox_only() {
        let ws = tempfile::tempdir().expect("dir");
        let day = ws.path().join("inbox/2026-12-01/from-x");
        std::fs::create_dir_all(&day).expect("mkdir");
        std::fs::write(day.join("a"), vec![0u8; 100]).expect("write");
        std::fs::write(ws.path().join("outside"), vec![0u8; 1000]).expect("write");
        std::os::unix::fs::symlink(ws.path().join("outside"), day.join("link")).expect("link");
        assert_eq!(usage(ws.path()), 100);
        assert_eq!(partial(&day.join("a.pdf")), day.join(".a.pdf.part"));
    }

    #[test]
    fn stale_partials_are_swept_and_nothing_else() {
        let ws = tempfile::tempdir().expect("dir");
        let day = ws.path().join("inbox/2026-12-01/from-x");
        std::fs::create_dir_all(&day).expect("mkdir");
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        let start = old + std::time::Duration::from_secs(60);
        let file = |name: &str, at: std::time::SystemTime| {
            let p = day.join(name);
            std::fs::write(&p, b"x").expect("write");
            std::fs::File::options()
                .write(true)
                .open(&p)
                .and_then(|f| f.set_modified(at))
                .expect("mtime");
            p
        };
        let stale = file(".photo.jpg.part", old);
        let live = file(".chart.png.part", start + std::time::Duration::from_secs(1));
        let kept = [
            file("photo.jpg", old),
            file(".notes", old),
            file("a.part", old),
            live.clone(),
        ];
        std::fs::write(ws.path().join(".outside.part"), b"x").expect("write");
        assert_eq!(sweep_partials(ws.path(), start), 1);
        assert!(!stale.exists());
        for k in &kept {
            assert!(k.exists(), "{} was swept", k.display());
        }
        assert!(ws.path().join(".outside.part").exists());
    }
}
