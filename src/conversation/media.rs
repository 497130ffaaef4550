//! Media in a turn: before it, each item a journaled message carries is fetched into the
//! workspace inbox (or refused with a note) one at a time by [`fetch_one`] (the turn's order is
//! [`super::media_in`]'s); after it, the files the answer names are queued as `Body::Media`
//! items behind its text.
//!
//! Crash safety: the item's row in `media_fetched` is written (`reserved`, with the chosen
//! path) before the download starts and turned into `saved` or `refused` after it, and the
//! download goes to a hidden partial file renamed into place, so a re-run after a crash reuses
//! the same name, overwrites its own leftover, and never stores a file twice. The message stays
//! journaled throughout: nothing is lost. Downloads run in the chat's turn worker, after the
//! journal commit, never on the poll path.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::{OptionalExtension, params};

use super::body::{Body, MediaOut};
use super::journal::Pending;
use super::{AccountRuntime, Conversation, MediaRef};
use crate::agent::{Attachment, MediaKind};
use crate::failure::general;
use crate::media::{self, human_size, inbox, names, outbound};
use crate::supervisor::unix_now;
use crate::words::{FileRefused, ItemSize, Lang, MediaSkip, Msg};

/// When this process first attached an account: a partial download last written before it
/// was left by an earlier run.
static STARTED: std::sync::LazyLock<std::time::SystemTime> =
    std::sync::LazyLock::new(std::time::SystemTime::now);

/// Sweeps the partial downloads a crash left in the account's inbox, on a blocking thread of
/// its own so the account's resumed work does not wait for it (the quiescence barrier does).
/// Runs when an account is attached; a download of this process is never touched.
pub(super) fn sweep_partials(conv: &Conversation, rt: &AccountRuntime) {
    let Some(workspace) = rt.link.workspace.clone() else {
        return;
    };
    // Fixed before any download of this process can start.
    let before = *STARTED;
    let account = rt.link.account.clone();
    let busy = conv.quiet.hold();
    tokio::task::spawn_blocking(move || {
        let n = inbox::sweep_partials(&workspace, before);
        if n > 0 {
            tracing::info!(account = %account, files = n, "removed partial downloads a crash left in the inbox");
        }
        drop(busy);
    });
}

/// What a message's media turned into for its turn.
#[derive(Default)]
pub(super) struct Prepared {
    /// Files saved in the workspace, for the backend.
    pub attachments: Vec<Attachment>,
    /// Lines the agent reads after the text: transcripts, descriptions of what was not saved.
    pub(super) lines: Vec<String>,
    /// One-line notes that start the reply (an item not passed on).
    pub(super) notes: Vec<String>,
}

impl Prepared {
    /// The prompt: the message's text, then the media lines.
    pub(super) fn prompt(&self, text: &str) -> String {
        if self.lines.is_empty() {
            return text.to_string();
        }
        format!("{text}\n{}", self.lines.join("\n"))
    }

    /// Whether the answer starts with notes (then it is not streamed: the notes come first).
    pub(super) fn has_notes(&self) -> bool {
        !self.notes.is_empty()
    }

    /// The answer with the notes before it.
    pub(super) fn with_notes(&self, answer: String) -> String {
        if self.notes.is_empty() {
            return answer;
        }
        let notes = self.notes.join("\n");
        if answer.is_empty() {
            notes
        } else {
            format!("{notes}\n\n{answer}")
        }
    }
}

/// Where one item stands in the store.
enum Record {
    Reserved(PathBuf),
    Saved(PathBuf),
    Refused(String),
}

/// The agent's line and the owner's note for an item that was not saved.
pub(super) fn not_saved(out: &mut Prepared, item: &MediaRef, why: MediaSkip, lang: Lang) {
    let what = describe(item);
    out.lines.push(format!("[{what} was not saved]"));
    out.notes.push(
        Msg::MediaNotSaved { item: what, why }
            .text(lang)
            .into_owned(),
    );
}

/// The attachment for a saved file; an image's type comes from its bytes.
pub(super) fn attachment(path: PathBuf, kind: MediaKind) -> Attachment {
    let mut head = [0u8; 16];
    let n = std::fs::File::open(&path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    let sniffed = media::kind::sniff_image(&head[..n]).or_else(|| {
        // A voice note's name is ours (`voice-….silk`), its container the platform's.
        use crate::speech::Format;
        match crate::speech::sniff(&head[..n])? {
            Format::Ogg => Some("audio/ogg"),
            Format::Wav => Some("audio/wav"),
            Format::Mp3 => Some("audio/mpeg"),
            Format::Silk => Some("audio/silk"),
        }
    });
    let kind = if sniffed.is_some_and(|m| m.starts_with("image/")) {
        MediaKind::Image
    } else {
        kind
    };
    let mime = sniffed
        .map(str::to_string)
        .or_else(|| Some(media::kind::mime_of(&path).to_string()));
    Attachment { path, kind, mime }
}

/// `photo.jpg`, or `a photo` when the sender gave no name.
fn describe(item: &MediaRef) -> String {
    if let Some(n) = item.name.as_deref().filter(|n| !n.trim().is_empty()) {
        return names::safe_name(Some(n), "file");
    }
    match item.kind {
        MediaKind::Image => "a photo",
        MediaKind::File => "a file",
        MediaKind::Audio => "a voice note",
        MediaKind::Video => "a video",
    }
    .to_string()
}

/// The name an item is saved under when the sender gave none.
fn fallback_name(msg_id: &str, i: usize, kind: MediaKind) -> String {
    let tag = names::short_tag(msg_id);
    let ext = match kind {
        MediaKind::Image => "jpg",
        MediaKind::Audio => "silk",
        MediaKind::Video => "mp4",
        MediaKind::File => "bin",
    };
    let stem = match kind {
        MediaKind::Image => "photo",
        MediaKind::Audio => "voice",
        MediaKind::Video => "video",
        MediaKind::File => "file",
    };
    format!("{stem}-{tag}-{i}.{ext}")
}

pub(super) async fn fetch_one(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    p: &Pending,
    i: usize,
    item: &MediaRef,
    taken: &mut HashSet<String>,
) -> Result<PathBuf, MediaSkip> {
    let m = &p.inbound;
    let limits = rt.link.media;
    let (a, id) = (m.account.to_string(), m.msg_id.as_str().to_string());
    let idx = i as i64;
    let found = {
        let (a, id) = (a.clone(), id.clone());
        conv.store
            .call(move |t| read(t, &a, &id, idx))
            .await
            .map_err(|e| MediaSkip::Failed {
                error: format!("cannot read the store: {e}"),
            })?
    };
    let reserved = match found {
        Some(Record::Saved(path)) if path.is_file() => return Ok(path),
        Some(Record::Refused(why)) => return Err(MediaSkip::Failed { error: why }),
        Some(Record::Reserved(path)) | Some(Record::Saved(path)) => Some(path),
        None => None,
    };
    let Some(workspace) = rt.link.workspace.as_deref() else {
        return Err(MediaSkip::NoWorkspace);
    };
    let too_large = |size: ItemSize| MediaSkip::TooLarge {
        size,
        max: human_size(limits.max_item_bytes),
        key: limits.item_key(&a),
    };
    if let Some(size) = item.size.filter(|s| *s > limits.max_item_bytes) {
        let declared = too_large(ItemSize::Declared(human_size(size)));
        return Err(refuse(conv, &a, &id, idx, declared).await);
    }
    let used = inbox::usage(workspace);
    let room = limits.max_workspace_bytes.saturating_sub(used);
    if room == 0 || item.size.is_some_and(|s| s > room) {
        let full = MediaSkip::WorkspaceFull {
            max: human_size(limits.max_workspace_bytes),
            key: limits.workspace_key(&a),
        };
        return Err(refuse(conv, &a, &id, idx, full).await);
    }
    let path = match reserved {
        Some(path) => path,
        None => reserve(conv, rt, m, i, item, workspace, taken).await?,
    };
    if let Some(n) = path.file_name() {
        taken.insert(n.to_string_lossy().into_owned());
    }
    let max = limits.max_item_bytes.min(room);
    let got = download(rt, item, &m.reply, &path, max).await;
    settle(conv, rt, m, idx, path, max, got).await
}

/// Records what one download ended with: the saved file, or the reason it is refused (kept,
/// so a re-run says the same without downloading again) unless it may heal (network).
async fn settle(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    m: &super::message::Inbound,
    idx: i64,
    path: PathBuf,
    max: u64,
    got: Result<u64, crate::failure::Failure>,
) -> Result<PathBuf, MediaSkip> {
    let limits = rt.link.media;
    let (a, id) = (m.account.to_string(), m.msg_id.as_str().to_string());
    match got {
        Ok(size) => {
            let p2 = path.clone();
            let stored = conv
                .store
                .call(move |t| write(t, &a, &id, idx, "saved", &p2, size, None))
                .await;
            if let Err(e) = stored {
                // The file is in place under its reserved name: a re-run finds and reuses it.
                tracing::warn!(account = %m.account, error = %e, "cannot record a saved file");
            }
            Ok(path)
        }
        Err(e) => {
            let transient = e.class == crate::failure::Class::Transient;
            let skip = download_skip(e, max, &limits, &a);
            // A download that may heal (network) is tried again by a re-run; one that cannot
            // (wrong key, bad size) is recorded so a re-run says the same without downloading.
            if transient {
                Err(skip)
            } else {
                Err(refuse(conv, &a, &id, idx, skip).await)
            }
        }
    }
}

/// Picks the item's name in the inbox (the message's day; a stranger's own folder) and records
/// it `reserved` before any byte arrives, so a re-run after a crash reuses the name.
async fn reserve(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    m: &super::Inbound,
    i: usize,
    item: &MediaRef,
    workspace: &Path,
    taken: &mut HashSet<String>,
) -> Result<PathBuf, MediaSkip> {
    let (_, is_owner) = rt.link.decide(&m.sender);
    let stranger = (!is_owner).then(|| m.sender.as_str());
    let dir = inbox::folder(workspace, m.at_unix_ms, stranger);
    let fallback = fallback_name(m.msg_id.as_str(), i, item.kind);
    let given = match &item.name {
        Some(n) => Some(n.clone()),
        None => rt.link.sender.media_name(item, &m.reply).await,
    };
    let name = names::unique(&dir, &names::safe_name(given.as_deref(), &fallback), taken);
    let path = dir.join(&name);
    let (a, id, p2) = (
        m.account.to_string(),
        m.msg_id.as_str().to_string(),
        path.clone(),
    );
    conv.store
        .call(move |t| write(t, &a, &id, i as i64, "reserved", &p2, 0, None))
        .await
        .map_err(|e| MediaSkip::Failed {
            error: format!("cannot write the store: {e}"),
        })?;
    Ok(path)
}

/// Why a failed download was not saved. More than `max` arrived: the real size is unknown (a
/// declared size under the limit was wrong), and when the inbox's room was the smaller bound,
/// the inbox is full.
fn download_skip(
    e: super::SendError,
    max: u64,
    limits: &crate::config::MediaLimits,
    account: &str,
) -> MediaSkip {
    if e.code == general::MEDIA_TOO_LARGE && max < limits.max_item_bytes {
        MediaSkip::WorkspaceFull {
            max: human_size(limits.max_workspace_bytes),
            key: limits.workspace_key(account),
        }
    } else if e.code == general::MEDIA_TOO_LARGE {
        MediaSkip::TooLarge {
            size: ItemSize::MoreThan(human_size(max)),
            max: human_size(limits.max_item_bytes),
            key: limits.item_key(account),
        }
    } else {
        MediaSkip::Failed { error: e.message }
    }
}

/// Downloads into the partial file and renames it into place.
async fn download(
    rt: &Arc<AccountRuntime>,
    item: &MediaRef,
    reply: &super::ReplyContext,
    path: &Path,
    max: u64,
) -> Result<u64, super::SendError> {
    let io = |e: std::io::Error| {
        super::SendError::rejected(
            general::MEDIA_UNSUPPORTED,
            format!("cannot save the file: {e}"),
        )
    };
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await.map_err(io)?;
    }
    let part = inbox::partial(path);
    let got = rt.link.sender.fetch(item, reply, &part, max).await;
    match got {
        Ok(size) => {
            tokio::fs::rename(&part, path).await.map_err(io)?;
            Ok(size)
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&part).await;
            Err(e)
        }
    }
}

/// Records a refusal (so a re-run does not download again) and hands it back.
async fn refuse(
    conv: &Arc<Conversation>,
    a: &str,
    id: &str,
    idx: i64,
    why: MediaSkip,
) -> MediaSkip {
    let note = match &why {
        MediaSkip::Failed { error } => error.clone(),
        MediaSkip::TooLarge {
            size: ItemSize::Declared(size),
            max,
            ..
        } => format!("{size}, over the {max} limit"),
        MediaSkip::TooLarge {
            size: ItemSize::MoreThan(read),
            max,
            ..
        } => format!("larger than the {max} limit: the download stopped after {read}"),
        MediaSkip::WorkspaceFull { max, .. } => format!("the workspace inbox is full ({max})"),
        MediaSkip::NoWorkspace => "no workspace".to_string(),
    };
    let (a, id) = (a.to_string(), id.to_string());
    let stored = conv
        .store
        .call(move |t| write(t, &a, &id, idx, "refused", Path::new(""), 0, Some(&note)))
        .await;
    if let Err(e) = stored {
        tracing::warn!(error = %e, "cannot record a refused media item");
    }
    why
}

fn read(
    t: &rusqlite::Transaction<'_>,
    account: &str,
    msg: &str,
    idx: i64,
) -> rusqlite::Result<Option<Record>> {
    t.prepare_cached(
        "SELECT state, path, note FROM media_fetched WHERE account = ?1 AND msg_id = ?2 AND idx = ?3",
    )?
    .query_row(params![account, msg, idx], |r| {
        let state: String = r.get(0)?;
        let path = PathBuf::from(r.get::<_, String>(1)?);
        Ok(match state.as_str() {
            "saved" => Record::Saved(path),
            "refused" => Record::Refused(r.get::<_, Option<String>>(2)?.unwrap_or_default()),
            _ => Record::Reserved(path),
        })
    })
    .optional()
}

#[allow(clippy::too_many_arguments)]
fn write(
    t: &rusqlite::Transaction<'_>,
    account: &str,
    msg: &str,
    idx: i64,
    state: &str,
    path: &Path,
    size: u64,
    note: Option<&str>,
) -> rusqlite::Result<()> {
    t.prepare_cached(
        "INSERT INTO media_fetched (account, msg_id, idx, state, path, size, note, at_unix)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT(account, msg_id, idx) DO UPDATE SET state = excluded.state,
         path = CASE WHEN excluded.path = '' THEN path ELSE excluded.path END,
         size = excluded.size, note = excluded.note",
    )?
    .execute(params![
        account,
        msg,
        idx,
        state,
        path.to_string_lossy(),
        size as i64,
        note,
        unix_now() as i64
    ])
    .map(drop)
}

/// The files `text` and `files` name, as outbox bodies to queue after the answer's text (each
/// with the text a text-only platform sends); refusals become lines appended to `text`.
pub(super) fn outgoing(
    rt: &AccountRuntime,
    text: &mut String,
    files: &[PathBuf],
    lang: Lang,
) -> Vec<(String, Body)> {
    let found = outbound::named(text, files, rt.link.workspace.as_deref());
    for (path, why) in &found.refused {
        let why = match why {
            outbound::Refusal::Outside => FileRefused::Outside,
            outbound::Refusal::Missing => FileRefused::Missing,
            outbound::Refusal::NoWorkspace => FileRefused::NoWorkspace,
        };
        let line = Msg::FileNotSent {
            path: path.clone(),
            why,
        }
        .text(lang);
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&line);
    }
    found
        .send
        .into_iter()
        .map(|f| {
            let kind = media::kind::kind_of(&f.path);
            let shown = format!("[{}]", f.name);
            let body = Body::Media(MediaOut {
                kind,
                path: f.path,
                name: f.name,
            });
            (shown, body)
        })
        .collect()
}
