//! A voice note before its turn: the platform's transcript (WeChat's `voice_item.text`,
//! WeCom's, DingTalk's, QQ's) and, when the account's `voice_text` asks for it or the platform
//! gave none, the bridge's own transcription through `[speech]`. The audio is saved in the
//! inbox like any media; the agent reads the transcript, marked as one, and gets the file only
//! when there is no transcript. A failed transcription starts the answer with a note, and the
//! speech server's status row says it is failing; the turn goes on, so the owner is answered.
//!
//! Transcripts are message text: never logged. A crash during transcription leaves the message
//! journaled; the re-run finds the saved file and transcribes it again, and the answer is
//! queued once under the message's answer key.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use super::journal::Pending;
use super::media::{Prepared, attachment, fetch_one, not_saved};
use super::{AccountRuntime, Conversation, MediaRef};
use crate::config::VoiceText;
use crate::protocol::SpeechHealth;
use crate::speech::{Speech, SpeechFailure};
use crate::words::{Lang, Voice};

impl Conversation {
    /// Sets (or, with `None`, clears) the speech server voice notes are transcribed with.
    pub fn set_speech(&self, speech: Option<Arc<Speech>>) {
        self.speech.store(speech);
    }

    /// The speech server's status row.
    pub fn speech_health(&self) -> SpeechHealth {
        match self.speech.load_full() {
            Some(s) => s.health(),
            None => Speech::not_configured(),
        }
    }

    /// The speech server in use, if any.
    pub fn speech(&self) -> Option<Arc<Speech>> {
        self.speech.load_full()
    }
}

/// The marked line of the platform's transcript (the form the agent has always read).
fn platform_line(t: &str) -> String {
    format!("[voice transcript: {t}]")
}

/// The marked line of the bridge's own transcript.
fn own_line(t: &str) -> String {
    format!("[voice transcript (speech server): {t}]")
}

/// Turns audio item `i` of `p`'s message into what the agent reads (see the module doc).
#[allow(clippy::too_many_arguments)]
pub(super) async fn prepare(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    p: &Pending,
    i: usize,
    item: &MediaRef,
    taken: &mut HashSet<String>,
    lang: Lang,
    out: &mut Prepared,
) {
    let platform = item
        .transcript
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    // WeCom hands over its transcript and no audio: nothing to fetch.
    let saved = match item.locator.is_null() {
        true => None,
        false => Some(fetch_one(conv, rt, p, i, item, taken).await),
    };
    let choice = rt.link.media.voice_text;
    let speech = conv.speech.load_full();
    let want_ours = platform.is_none() || choice != VoiceText::Platform;
    let ours = match (&speech, &saved, want_ours) {
        (Some(s), Some(Ok(path)), true) => Some(transcribe(s, path).await),
        _ => None,
    };
    let ours_text = ours.as_ref().and_then(|r| r.as_ref().ok());
    let mut heard = false;
    if let Some(t) = platform
        && (choice != VoiceText::Speech || ours_text.is_none())
    {
        out.lines.push(platform_line(t));
        heard = true;
    }
    if let Some(t) = ours_text.filter(|t| !t.is_empty()) {
        out.lines.push(own_line(t));
        heard = true;
    }
    if heard {
        return;
    }
    match saved {
        Some(Ok(path)) => {
            out.attachments
                .push(attachment(path, crate::agent::MediaKind::Audio));
            out.lines
                .push("[voice note, not transcribed: the audio file is attached]".into());
            if let Some(Err(e)) = ours {
                out.notes.push(
                    Voice::NotTranscribed {
                        why: e.message(),
                        action: e.action(),
                    }
                    .text(lang)
                    .into_owned(),
                );
            }
        }
        Some(Err(why)) => not_saved(out, item, why, lang),
        // No audio and an empty transcript: the adapter's "[voice]" is all there is.
        None => {}
    }
}

/// The bridge's transcript of the saved file, or why there is none.
async fn transcribe(speech: &Speech, path: &PathBuf) -> Result<String, SpeechFailure> {
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|e| SpeechFailure::Decode(format!("cannot read the saved voice note: {e}")))?;
    let r = speech.transcribe(bytes).await;
    if let Err(e) = &r {
        // The failure's code only: never the audio, the transcript or the file's name.
        tracing::warn!(code = e.code(), "a voice note was not transcribed");
    }
    r
}
