//! Every text the bridge writes to a person in a chat, in English and Simplified Chinese, and
//! how a chat's language is chosen. The CLI, logs and health notes stay English (operator texts).

mod agents;
mod alert;
mod bridge;
mod card;
mod catalogue;
mod choose;
mod confirm;
mod console;
mod digest;
mod mail;
pub mod menu;
mod resend;
mod size;
mod voice;
mod wizard;

pub use agents::AgentWords;
pub use alert::{RouteBack, RouteStopped, RouteWaiting, WaitFix};
pub use bridge::Bridge;
pub use card::Card;
pub use catalogue::{FileRefused, ItemSize, MediaSkip, Msg};
pub use choose::{detect, remember, remembered};
pub use confirm::{Ask, QUOTE_CHARS, answer_word, quote};
pub use console::{Console, accept_language, console};
pub use digest::Digest;
pub use mail::MailChat;
pub use resend::{AGAIN, Resend};
pub use size::human_size;
pub use voice::{Voice, VoiceLacks};
pub use wizard::{Wizard, wizard};

use serde::Deserialize;

/// A language the bridge writes in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Lang {
    /// English (the default until a chat shows otherwise).
    #[default]
    En,
    /// Simplified Chinese.
    ZhCn,
}

impl Lang {
    /// The stored and configured name (`en`, `zh-CN`).
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::ZhCn => "zh-CN",
        }
    }

    /// The language named by [`Lang::as_str`], if it is one.
    pub fn parse(s: &str) -> Option<Lang> {
        match s {
            "en" => Some(Lang::En),
            "zh-CN" => Some(Lang::ZhCn),
            _ => None,
        }
    }
}

/// The `language` key: a fixed language, or `auto` (follow the owner's messages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
pub enum Language {
    /// Follow the owner's messages (CJK text means Chinese, other letters English), remembered
    /// per chat.
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Always English.
    #[serde(rename = "en")]
    En,
    /// Always Simplified Chinese.
    #[serde(rename = "zh-CN")]
    ZhCn,
}

impl Language {
    /// The fixed language, or `None` for `auto`.
    pub fn fixed(self) -> Option<Lang> {
        match self {
            Language::Auto => None,
            Language::En => Some(Lang::En),
            Language::ZhCn => Some(Lang::ZhCn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every text of the catalogue with sample arguments: (what it is, English, Chinese).
    fn every() -> Vec<(String, String, String)> {
        let chat = catalogue::tests::every().into_iter().map(|m| {
            let (en, zh) = (m.text(Lang::En), m.text(Lang::ZhCn));
            (format!("{m:?}"), en.into_owned(), zh.into_owned())
        });
        let asks = confirm::tests::every().into_iter().map(|m| {
            let (en, zh) = (m.text(Lang::En), m.text(Lang::ZhCn));
            (format!("{m:?}"), en.into_owned(), zh.into_owned())
        });
        let digests = digest::tests::every().into_iter().map(|m| {
            let (en, zh) = (m.text(Lang::En), m.text(Lang::ZhCn));
            (format!("{m:?}"), en.into_owned(), zh.into_owned())
        });
        let mail = mail::tests::every().into_iter().map(|m| {
            let (en, zh) = (m.text(Lang::En), m.text(Lang::ZhCn));
            (format!("{m:?}"), en.into_owned(), zh.into_owned())
        });
        let resend = resend::tests::every().into_iter().map(|m| {
            let (en, zh) = (m.text(Lang::En), m.text(Lang::ZhCn));
            (format!("{m:?}"), en.into_owned(), zh.into_owned())
        });
        let wizard = wizard::tests::every()
            .into_iter()
            .map(|(en, zh)| (format!("init: {en}"), en, zh));
        chat.chain(asks)
            .chain(digests)
            .chain(mail)
            .chain(resend)
            .chain(wizard)
            .collect()
    }

    #[test]
    fn every_text_has_both_languages_and_the_chinese_is_its_own() {
        let cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        let all = every();
        assert!(all.len() > 20, "the table covers the catalogue");
        for (what, en, zh) in all {
            assert!(!en.trim().is_empty(), "{what} has no English");
            assert!(!zh.trim().is_empty(), "{what} has no Chinese");
            assert_ne!(en, zh, "{what}: the Chinese is the English");
            assert!(cjk(&zh), "{what}: the Chinese has no Chinese: {zh}");
            assert!(!cjk(&en), "{what}: the English has Chinese: {en}");
        }
    }
}
