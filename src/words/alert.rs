//! The alert that tells the owner, on another route, that one of their chats stopped
//! (`owner/alerts.rs` sends it once per failure).

use std::borrow::Cow;

use super::{Lang, Language};

/// One route stopped: which, why (the failure's message, as `status` shows it) and the command
/// that fixes it, when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteStopped {
    /// `<channel>:<account>`.
    pub route: String,
    /// Why, for people (the platform's reason; no secret, no message text).
    pub why: String,
    /// The command to run, ready to copy.
    pub fix: Option<String>,
}

impl RouteStopped {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match (lang, &self.fix) {
            (Lang::En, Some(f)) => format!(
                "⚠️ {} stopped: {}. Messages for you come here meanwhile. Fix: {f}",
                self.route, self.why
            ),
            (Lang::En, None) => format!(
                "⚠️ {} stopped: {}. Messages for you come here meanwhile.",
                self.route, self.why
            ),
            (Lang::ZhCn, Some(f)) => format!(
                "⚠️ {} 已停止：{}。在此期间给你的消息会发到这里。修复：{f}",
                self.route, self.why
            ),
            (Lang::ZhCn, None) => format!(
                "⚠️ {} 已停止：{}。在此期间给你的消息会发到这里。",
                self.route, self.why
            ),
        }
        .into()
    }

    /// For a chat whose reader's language is not known: the fixed one, else both.
    pub fn text_for(&self, setting: Language) -> Cow<'static, str> {
        match setting.fixed() {
            Some(lang) => self.text(lang),
            None => format!("{}\n{}", self.text(Lang::En), self.text(Lang::ZhCn)).into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alert_names_the_route_why_and_fix_in_both_languages() {
        let a = RouteStopped {
            route: "wechat:phone".into(),
            why: "WeChat ended the session".into(),
            fix: Some("scv-bridge login wechat phone".into()),
        };
        assert_eq!(
            a.text(Lang::En),
            "⚠️ wechat:phone stopped: WeChat ended the session. Messages for you come here meanwhile. Fix: scv-bridge login wechat phone"
        );
        assert!(
            a.text(Lang::ZhCn)
                .contains("修复：scv-bridge login wechat phone")
        );
        let both = a.text_for(Language::default());
        assert!(
            both.contains("stopped") && both.contains("已停止"),
            "{both}"
        );
    }
}
