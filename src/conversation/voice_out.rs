//! An answer in voice: when the chat wants it (`voice_mode`) and its platform shows voice
//! bubbles, the first part of what the agent said (`speech::spoken_part`, at most `[speech]
//! voice_max_chars`) is spoken by the speech server into Ogg Opus, written into the workspace
//! (`.voice/answer-<tag>.opus`, so the send path's inside-the-workspace rule holds) and queued
//! as a `Body::Media` of kind `Audio` once the text, which always goes in full, is queued: the
//! text is not held back by the synthesis (spec B5). A failed synthesis, or a crash during it,
//! costs the voice only: the text is already there, and status shows the failure.

use std::sync::Arc;

use super::body::{Body, MediaOut};
use super::message::{Inbound, OutboundKind};
use super::{AccountRuntime, Conversation};
use crate::agent::MediaKind;
use crate::ids::OutboxKey;

/// The folder of spoken answers inside a workspace.
const VOICE_DIR: &str = ".voice";

/// Queues the voice of the answer to `m` (what the agent `said`), when the chat gets one.
pub(super) async fn after_answer(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    m: &Inbound,
    said: &str,
) {
    let key = String::from(OutboxKey::reply(&m.account, &m.msg_id, "voice"));
    let Some((shown, body)) = speak(conv, rt, m, &key, said).await else {
        return;
    };
    let queued = conv
        .outbox
        .enqueue(
            &m.account,
            &m.chat,
            &[shown],
            &body,
            &key,
            &m.reply,
            OutboundKind::Reply,
        )
        .await;
    match queued {
        Ok(_) => conv.chat(rt, &m.chat).wake_send(),
        Err(e) => {
            tracing::warn!(account = %m.account, error = %e, "a spoken answer cannot be queued")
        }
    }
}

/// The voice item to queue after the answer's text, if the chat gets one.
async fn speak(
    conv: &Arc<Conversation>,
    rt: &Arc<AccountRuntime>,
    m: &Inbound,
    key: &str,
    said: &str,
) -> Option<(String, Body)> {
    if !rt.link.capabilities.voice_bubbles {
        return None;
    }
    let speech = conv.speech()?;
    let workspace = rt.link.workspace.clone()?;
    let (a, c) = (m.account.to_string(), m.chat.as_str().to_string());
    let mode = conv
        .store
        .call(move |t| super::voice_mode::read(t, &a, &c))
        .await
        .ok()?;
    if !mode.speaks_to(m) {
        return None;
    }
    let max = speech.settings().ok()?.voice_max_chars;
    let part = crate::speech::spoken_part(said, max)?;
    let audio = match speech.synthesize(&part.text).await {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(account = %m.account, code = e.code(), "an answer was not spoken");
            return None;
        }
    };
    let dir = workspace.join(VOICE_DIR);
    let name = format!("answer-{}.opus", crate::media::names::short_tag(key));
    let path = dir.join(&name);
    let written = async {
        tokio::fs::create_dir_all(&dir).await?;
        tokio::fs::write(&path, &audio).await?;
        tokio::fs::canonicalize(&path).await
    };
    let path = match written.await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(account = %m.account, error = %e, "a spoken answer cannot be written into the workspace");
            return None;
        }
    };
    let shown = format!("[{name}]");
    let body = Body::Media(MediaOut {
        kind: MediaKind::Audio,
        path,
        name: "answer.opus".into(),
    });
    Some((shown, body))
}
