//! The words on a question card and on the card that replaces it once answered (WeCom's
//! template cards), and the note for a message type the bridge cannot read, in both languages.
//! Cards have short title fields, so these stay short.

use std::borrow::Cow;

use super::{Lang, Language};

/// A text on (or about) a platform's card, or a platform message the bridge cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Card {
    /// The title of a question card, above its buttons.
    Title,
    /// The yes button.
    Yes,
    /// The no button.
    No,
    /// The answered card: approved.
    Approved,
    /// The answered card: declined.
    Declined,
    /// The answered card: the question expired.
    Expired,
    /// The answered card: the asker withdrew it.
    Withdrawn,
    /// The answered card: the question is closed some other way.
    Closed,
    /// A message of a type the bridge does not read (`msgtype` as the platform names it).
    Unsupported {
        /// The platform's name of the type.
        msgtype: String,
    },
}

impl Card {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match lang {
            Lang::En => self.en(),
            Lang::ZhCn => self.zh(),
        }
    }

    /// The text for a chat whose reader's language is not known: the fixed language, else
    /// English then Chinese.
    pub fn text_for(&self, setting: Language) -> Cow<'static, str> {
        match setting.fixed() {
            Some(lang) => self.text(lang),
            None => format!("{}\n{}", self.text(Lang::En), self.text(Lang::ZhCn)).into(),
        }
    }

    fn en(&self) -> Cow<'static, str> {
        match self {
            Card::Title => "Approve?".into(),
            Card::Yes => "Yes".into(),
            Card::No => "No".into(),
            Card::Approved => "✅ Approved".into(),
            Card::Declined => "❌ Declined".into(),
            Card::Expired => "⌛ Expired without an answer".into(),
            Card::Withdrawn => "↩️ Withdrawn by the asker".into(),
            Card::Closed => "Closed".into(),
            Card::Unsupported { msgtype } => format!(
                "This kind of message ({msgtype}) cannot be read by the bridge yet. Send text, pictures, files or voice."
            )
            .into(),
        }
    }

    fn zh(&self) -> Cow<'static, str> {
        match self {
            Card::Title => "是否同意？".into(),
            Card::Yes => "同意".into(),
            Card::No => "拒绝".into(),
            Card::Approved => "✅ 已同意".into(),
            Card::Declined => "❌ 已拒绝".into(),
            Card::Expired => "⌛ 已过期，未作答".into(),
            Card::Withdrawn => "↩️ 提问方已撤回".into(),
            Card::Closed => "已结束".into(),
            Card::Unsupported { msgtype } => {
                format!("桥接暂时无法读取这类消息（{msgtype}）。请发送文字、图片、文件或语音。")
                    .into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_has_both_languages() {
        let all = [
            Card::Title,
            Card::Yes,
            Card::No,
            Card::Approved,
            Card::Declined,
            Card::Expired,
            Card::Withdrawn,
            Card::Closed,
            Card::Unsupported {
                msgtype: "appmsg".into(),
            },
        ];
        for c in all {
            let (en, zh) = (c.text(Lang::En), c.text(Lang::ZhCn));
            assert!(!en.is_empty() && !zh.is_empty() && en != zh, "{c:?}");
        }
    }
}
