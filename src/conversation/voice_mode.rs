//! `/voice on|off|auto`: whether a chat's answers also come as a voice bubble, kept per chat in
//! `chat_voice` so a restart keeps it. `auto` (the default, no row) answers in voice when the
//! message was a voice note. Only platforms whose sender shows voice bubbles
//! (`Capabilities::voice_bubbles`) ever get one; elsewhere the answer stays text and `/voice`
//! says so.

use rusqlite::{OptionalExtension, Transaction};

use super::message::Inbound;
use super::{AccountRuntime, Conversation};
use crate::words::{Msg, Voice, VoiceLacks};

/// How a chat wants its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoiceMode {
    /// Every answer as voice too.
    On,
    /// Text only.
    Off,
    /// Voice too when the message was a voice note (the default).
    Auto,
}

impl VoiceMode {
    fn as_str(self) -> &'static str {
        match self {
            VoiceMode::On => "on",
            VoiceMode::Off => "off",
            VoiceMode::Auto => "auto",
        }
    }

    /// Whether the answer to `m` goes as voice too.
    pub(super) fn speaks_to(self, m: &Inbound) -> bool {
        match self {
            VoiceMode::On => true,
            VoiceMode::Off => false,
            VoiceMode::Auto => m
                .media
                .iter()
                .any(|i| i.kind == crate::agent::MediaKind::Audio),
        }
    }
}

/// What `/voice ...` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VoiceArg {
    /// `/voice`: the current setting.
    Show,
    /// `/voice on|off|auto`.
    Set(VoiceMode),
    /// `/voice` with anything else.
    Bad,
}

/// The `/voice` command `text` is, if it is one.
pub fn parse(text: &str) -> Option<VoiceArg> {
    let t = text.trim().to_ascii_lowercase();
    let rest = t.strip_prefix("/voice")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some(match rest.trim() {
        "" => VoiceArg::Show,
        "on" => VoiceArg::Set(VoiceMode::On),
        "off" => VoiceArg::Set(VoiceMode::Off),
        "auto" => VoiceArg::Set(VoiceMode::Auto),
        _ => VoiceArg::Bad,
    })
}

/// The chat's setting.
pub(super) fn read(t: &Transaction<'_>, account: &str, chat: &str) -> rusqlite::Result<VoiceMode> {
    let mode: Option<String> = t
        .prepare_cached("SELECT mode FROM chat_voice WHERE account = ?1 AND chat = ?2")?
        .query_row([account, chat], |r| r.get(0))
        .optional()?;
    Ok(match mode.as_deref() {
        Some("on") => VoiceMode::On,
        Some("off") => VoiceMode::Off,
        _ => VoiceMode::Auto,
    })
}

fn write(t: &Transaction<'_>, account: &str, chat: &str, mode: VoiceMode) -> rusqlite::Result<()> {
    if mode == VoiceMode::Auto {
        t.prepare_cached("DELETE FROM chat_voice WHERE account = ?1 AND chat = ?2")?
            .execute([account, chat])?;
    } else {
        t.prepare_cached(
            "INSERT INTO chat_voice (account, chat, mode) VALUES (?1, ?2, ?3)
             ON CONFLICT (account, chat) DO UPDATE SET mode = excluded.mode",
        )?
        .execute([account, chat, mode.as_str()])?;
    }
    Ok(())
}

/// Runs `/voice ...` for the owner of `m`'s chat.
pub(super) async fn run(
    conv: &Conversation,
    rt: &AccountRuntime,
    m: &Inbound,
    arg: VoiceArg,
) -> Msg {
    let (a, c) = (m.account.to_string(), m.chat.as_str().to_string());
    let mode = match arg {
        VoiceArg::Bad => return Msg::Voice(Voice::Usage),
        VoiceArg::Show => conv.store.call(move |t| read(t, &a, &c)).await,
        VoiceArg::Set(mode) => {
            conv.store
                .call(move |t| write(t, &a, &c, mode).map(|()| mode))
                .await
        }
    };
    match mode {
        Ok(mode) => Msg::Voice(Voice::Mode {
            mode: mode.as_str(),
            bubbles: rt.link.capabilities.voice_bubbles,
            lacks: lacks(conv, rt, mode),
        }),
        Err(e) => Msg::Voice(Voice::Failed {
            error: format!("the store: {e}"),
        }),
    }
}

/// What keeps this chat's answers from being spoken although it asked for them: said with the
/// setting, since a spoken answer that cannot be made is otherwise dropped without a word.
fn lacks(conv: &Conversation, rt: &AccountRuntime, mode: VoiceMode) -> Option<VoiceLacks> {
    if mode == VoiceMode::Off || !rt.link.capabilities.voice_bubbles {
        None
    } else if conv.speech().is_none() {
        Some(VoiceLacks::Speech)
    } else if rt.link.workspace.is_none() {
        Some(VoiceLacks::Workspace)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_voice_command_parses() {
        assert_eq!(parse("/voice"), Some(VoiceArg::Show));
        assert_eq!(parse(" /Voice ON "), Some(VoiceArg::Set(VoiceMode::On)));
        assert_eq!(parse("/voice off"), Some(VoiceArg::Set(VoiceMode::Off)));
        assert_eq!(parse("/voice auto"), Some(VoiceArg::Set(VoiceMode::Auto)));
        assert_eq!(parse("/voice loud"), Some(VoiceArg::Bad));
        assert_eq!(parse("/voicemail"), None);
        assert_eq!(parse("voice on"), None);
    }
}
