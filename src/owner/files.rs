//! The files of a `send --file`: checked when the send is asked, by the rules answers' files
//! follow (`media::outbound`): a regular file, symlinks resolved, inside an allowed place (the
//! workspace of a configured account), and no larger than that account's `max_item_mb`. A refusal says
//! what to do, with a command that works when copied.

use std::path::{Path, PathBuf};

use super::OwnerError;
use crate::config::shell_quote;
use crate::conversation::body::MediaOut;
use crate::media::outbound::{self, Refusal};

/// The most files one send takes.
pub const MAX_FILES: usize = 10;

/// Where files may be sent from, and how large each may be.
#[derive(Debug, Clone, Default)]
pub struct FileRules {
    /// The configured accounts' workspaces.
    pub places: Vec<Place>,
}

/// One account's workspace and its `max_item_mb` (its own `media` table's, else `[media]`'s).
#[derive(Debug, Clone)]
pub struct Place {
    /// The workspace.
    pub dir: PathBuf,
    /// The largest file, in bytes.
    pub max_bytes: u64,
}

/// Checks each of `paths` (absolute: the command line makes them so) and returns them as the
/// outbox's media, in order.
pub fn check(paths: &[PathBuf], rules: &FileRules) -> Result<Vec<MediaOut>, OwnerError> {
    if paths.len() > MAX_FILES {
        return Err(OwnerError::InvalidRequest(format!(
            "{} files in one send; at most {MAX_FILES}: split them over several sends",
            paths.len()
        )));
    }
    paths.iter().map(|p| one(p, rules)).collect()
}

fn one(path: &Path, rules: &FileRules) -> Result<MediaOut, OwnerError> {
    let shown = shell_quote(path);
    if !path.is_absolute() {
        return Err(OwnerError::InvalidRequest(format!(
            "{shown} is not a full path; give it as {}",
            crate::config::command("send --file \"$PWD/FILE\"")
        )));
    }
    let Some(first) = rules.places.first() else {
        return Err(OwnerError::InvalidRequest(format!(
            "cannot send {shown}: files are sent only from an account's workspace, and none has one; set one: {}",
            crate::config::command("channel set CHANNEL ACCOUNT --workspace DIR")
        )));
    };
    let mut missing = false;
    for place in &rules.places {
        let named = outbound::named("", &[path.to_path_buf()], Some(&place.dir));
        if let Some(f) = named.send.into_iter().next() {
            return sized(f, place.max_bytes);
        }
        missing |= named.refused.iter().any(|(_, r)| *r == Refusal::Missing);
    }
    if missing && !path.is_symlink() {
        return Err(OwnerError::InvalidRequest(format!(
            "cannot send {shown}: there is no such file (or it is not a regular file)"
        )));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let first = &first.dir;
    let copied = first.join(&name);
    Err(OwnerError::InvalidRequest(format!(
        "cannot send {shown}: it is outside the places files are sent from (the accounts' workspaces); copy it into one first: cp {shown} {} && {}",
        shell_quote(first),
        crate::config::command(&format!("send --file {}", shell_quote(&copied)))
    )))
}

/// `f` as media when it is within its place's size cap.
fn sized(f: outbound::ToSend, max_bytes: u64) -> Result<MediaOut, OwnerError> {
    let size = f.path.metadata().map(|m| m.len()).unwrap_or(0);
    if size > max_bytes {
        return Err(OwnerError::InvalidRequest(format!(
            "cannot send {}: it is {}, over the {} each file may be ([media] max_item_mb; `{}` shows it)",
            shell_quote(&f.path),
            crate::words::human_size(size),
            crate::words::human_size(max_bytes),
            crate::config::EXAMPLE_COMMAND
        )));
    }
    Ok(MediaOut {
        kind: crate::media::kind::kind_of(&f.path),
        path: f.path,
        name: f.name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_inside_a_workspace_within_the_cap_are_taken_others_refused_with_the_fix() {
        let ws = tempfile::tempdir().expect("dir");
        let outside = tempfile::tempdir().expect("dir");
        std::fs::write(ws.path().join("chart.png"), b"png").expect("write");
        std::fs::write(ws.path().join("big.bin"), vec![0u8; 2048]).expect("write");
        std::fs::write(outside.path().join("secret.txt"), b"s").expect("write");
        let rules = FileRules {
            places: vec![Place {
                dir: ws.path().to_path_buf(),
                max_bytes: 1024,
            }],
        };
        let got = check(&[ws.path().join("chart.png")], &rules).expect("inside");
        assert_eq!(got[0].name, "chart.png");
        assert_eq!(got[0].kind, crate::agent::MediaKind::Image);
        let e = check(&[outside.path().join("secret.txt")], &rules).expect_err("outside");
        assert!(
            e.message().contains("outside")
                && e.message().contains("cp ")
                && e.message().contains("send --file"),
            "{e:?}"
        );
        let e = check(&[ws.path().join("gone.txt")], &rules).expect_err("missing");
        assert!(e.message().contains("no such file"), "{e:?}");
        let e = check(&[ws.path().join("big.bin")], &rules).expect_err("too big");
        assert!(e.message().contains("max_item_mb"), "{e:?}");
        let e = check(&[PathBuf::from("chart.png")], &rules).expect_err("relative");
        assert!(e.message().contains("full path"), "{e:?}");
        let none = FileRules::default();
        let e = check(&[ws.path().join("chart.png")], &none).expect_err("no place");
        assert!(e.message().contains("--workspace"), "{e:?}");
    }
}
