//! What a chat reads about a reply a restart may have cut off (WeChat: a send the platform may
//! have shown before the bridge could record it is held, not repeated; `/again` sends it).

use std::borrow::Cow;

use super::Lang;

/// The command that sends held replies again; the same in every language.
pub const AGAIN: &str = "/again";

/// A line about a reply held after a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resend {
    /// Sent in the held reply's place: it may or may not have arrived, and how to get it.
    MayBeCutOff {
        /// The reply's first words, so the reader can tell whether they have it.
        preview: String,
    },
    /// Sent in place of a reply whose send may or may not have reached the chat (a restart or
    /// a lost connection during it), on platforms without a send key (`port::held`).
    InDoubt {
        /// The reply's first words, so the reader can tell whether they have it.
        preview: String,
    },
    /// The answer to `/again` when nothing is held in the chat.
    NothingHeld,
}

impl Resend {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match (lang, self) {
            (Lang::En, Resend::MayBeCutOff { preview }) => format!(
                "(A restart may have cut off the reply that begins \"{preview}\". \
If it did not arrive, send {AGAIN} to get it.)"
            )
            .into(),
            (Lang::ZhCn, Resend::MayBeCutOff { preview }) => format!(
                "（重启可能打断了以“{preview}”开头的那条回复。如果没有收到，请发送 {AGAIN} 重新获取。）"
            )
            .into(),
            (Lang::En, Resend::InDoubt { preview }) => format!(
                "(The reply that begins \"{preview}\" may not have arrived: the bridge restarted \
or lost its connection while sending it. If you do not see it, send {AGAIN} to get it.)"
            )
            .into(),
            (Lang::ZhCn, Resend::InDoubt { preview }) => format!(
                "（以“{preview}”开头的那条回复可能没有送达：发送时桥接程序重启或断开了连接。如果没有看到，请发送 {AGAIN} 重新获取。）"
            )
            .into(),
            (Lang::En, Resend::NothingHeld) => {
                "Nothing is waiting to be sent again in this chat.".into()
            }
            (Lang::ZhCn, Resend::NothingHeld) => "这个对话里没有等待重新发送的回复。".into(),
        }
    }

    /// The text for the account's `language` setting: both languages under `auto`.
    pub fn text_for(&self, setting: super::Language) -> Cow<'static, str> {
        match setting.fixed() {
            Some(lang) => self.text(lang),
            None => format!("{}\n{}", self.text(Lang::En), self.text(Lang::ZhCn)).into(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One of every resend text.
    pub(crate) fn every() -> Vec<Resend> {
        vec![
            Resend::MayBeCutOff {
                preview: "Sure, here is".into(),
            },
            Resend::InDoubt {
                preview: "Sure, here is".into(),
            },
            Resend::NothingHeld,
        ]
    }

    #[test]
    fn the_command_stays_untranslated() {
        for lang in [Lang::En, Lang::ZhCn] {
            assert!(every()[0].text(lang).contains(AGAIN), "{lang:?}");
            assert!(every()[1].text(lang).contains(AGAIN), "{lang:?}");
        }
    }
}
