//! Media before a turn, in order: each item of a journaled message is fetched by
//! [`super::media::fetch_one`], except a voice note, which [`super::voice`] turns into its
//! transcript. Kept apart from `media` so that voice, which builds on media's fetching, is not
//! called back from it (no circle between the two).

use std::collections::HashSet;
use std::sync::Arc;

use super::journal::Pending;
use super::media::{Prepared, attachment, fetch_one, not_saved};
use super::{AccountRuntime, Conversation};
use crate::agent::MediaKind;
use crate::protocol::NoteSource;
use crate::words::{Lang, Msg};

/// How long the media of a message may take before the chat is told its message waits for
/// them: a slow transfer holds the chat's next messages too, and the owner should know why.
const STILL_DOWNLOADING_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// Fetches (or finds, after a crash) every media item of `p`'s message; when that takes longer
/// than [`STILL_DOWNLOADING_AFTER`], tells the chat once (keyed by the message, so a rerun
/// after a crash does not say it twice).
pub(super) async fn prepare(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    p: &Pending,
    lang: Lang,
) -> Prepared {
    let work = fetch_all(conv, rt, p, lang);
    tokio::pin!(work);
    tokio::select! {
        done = &mut work => return done,
        _ = tokio::time::sleep(STILL_DOWNLOADING_AFTER) => {}
    }
    let m = &p.inbound;
    let text = Msg::StillDownloading {
        items: m.media.len(),
    }
    .text(lang);
    if let Err(e) = conv.reply_text(rt, m, "downloading", &text).await {
        tracing::warn!(account = %m.account, error = %e, "cannot queue the note that media is still downloading");
    }
    // Status says it too, for as long as it lasts: the chat's next messages wait behind it.
    let note = format!(
        "media: {} item(s) downloading for more than {} s; the chat's next messages wait",
        m.media.len(),
        STILL_DOWNLOADING_AFTER.as_secs()
    );
    rt.link.health.note(NoteSource::Media, Some(note));
    let done = work.await;
    rt.link.health.note(NoteSource::Media, None);
    done
}

async fn fetch_all(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    p: &Pending,
    lang: Lang,
) -> Prepared {
    let m = &p.inbound;
    let mut out = Prepared::default();
    let mut taken = HashSet::new();
    for (i, item) in m.media.iter().enumerate() {
        // A voice note: its transcript (the platform's, or ours through `[speech]`).
        if item.kind == MediaKind::Audio {
            super::voice::prepare(conv, rt, p, i, item, &mut taken, lang, &mut out).await;
            continue;
        }
        match fetch_one(conv, rt, p, i, item, &mut taken).await {
            Ok(path) => out.attachments.push(attachment(path, item.kind)),
            Err(why) => not_saved(&mut out, item, why, lang),
        }
    }
    out
}
