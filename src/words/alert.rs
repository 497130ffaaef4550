//! The alerts that tell the owner, on another route, that one of their chats stopped, that its
//! messages wait too long, and that it delivers again (`owner/alerts.rs`, `owner/stuck.rs`).

use std::borrow::Cow;

use super::{Lang, Language};
use crate::protocol::WaitWhy;

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
        both(setting, |l| self.text(l))
    }
}

/// What the owner can do about a wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitFix {
    /// Run this command (ready to copy).
    Command(String),
    /// Write any message in that chat (a send window opens when the owner writes).
    WriteThere,
    /// Nothing: the platform sets the pace and they go out by themselves.
    Nothing,
}

/// A route's messages (replies too) have waited longer than the bound: which route, on which
/// platform (its label), how long, why, and the fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteWaiting {
    /// `<channel>:<account>`.
    pub route: String,
    /// The platform's name for people (`WeChat`).
    pub platform: &'static str,
    /// Whole minutes waited so far (at least 1).
    pub minutes: u64,
    /// Why they wait.
    pub why: WaitWhy,
    /// What to do.
    pub fix: WaitFix,
}

impl RouteWaiting {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        let (route, p, m) = (&self.route, self.platform, self.minutes.max(1));
        let why = match (lang, self.why) {
            (Lang::En, WaitWhy::SendWindow) => format!("{p}'s send window is closed"),
            (Lang::En, WaitWhy::Throttle) => format!("{p} asked the bridge to slow down"),
            (Lang::En, WaitWhy::AccountDown) => "the account is not running".to_string(),
            (Lang::En, WaitWhy::SendsFailing) => format!("sends to {p} fail and are retried"),
            (Lang::En, WaitWhy::Unknown) => "a reason this version does not know".to_string(),
            (Lang::ZhCn, WaitWhy::SendWindow) => format!("{p} 的发送窗口已关闭"),
            (Lang::ZhCn, WaitWhy::Throttle) => format!("{p} 要求放慢发送"),
            (Lang::ZhCn, WaitWhy::AccountDown) => "该账号没有在运行".to_string(),
            (Lang::ZhCn, WaitWhy::SendsFailing) => format!("发往 {p} 的消息发送失败，正在重试"),
            (Lang::ZhCn, WaitWhy::Unknown) => "此版本不认识的原因".to_string(),
        };
        let fix = match (lang, &self.fix) {
            (Lang::En, WaitFix::Command(c)) => format!("fix: {c}"),
            (Lang::En, WaitFix::WriteThere) => {
                "fix: write any message in that chat to open it".to_string()
            }
            (Lang::En, WaitFix::Nothing) => "they go out by themselves".to_string(),
            (Lang::ZhCn, WaitFix::Command(c)) => format!("修复：{c}"),
            (Lang::ZhCn, WaitFix::WriteThere) => {
                "修复：在那个聊天里发任意一条消息即可打开".to_string()
            }
            (Lang::ZhCn, WaitFix::Nothing) => "它们会自行发出".to_string(),
        };
        match lang {
            Lang::En => format!("⚠️ {route}: replies waiting {m} min: {why}; {fix}"),
            Lang::ZhCn => format!("⚠️ {route}：回复已等待 {m} 分钟：{why}；{fix}"),
        }
        .into()
    }

    /// For a chat whose reader's language is not known: the fixed one, else both.
    pub fn text_for(&self, setting: Language) -> Cow<'static, str> {
        both(setting, |l| self.text(l))
    }
}

/// A route the owner was told about delivers again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteBack {
    /// `<channel>:<account>`.
    pub route: String,
}

impl RouteBack {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match lang {
            Lang::En => format!("✅ {}: messages go out again.", self.route),
            Lang::ZhCn => format!("✅ {}：消息已恢复发送。", self.route),
        }
        .into()
    }

    /// For a chat whose reader's language is not known: the fixed one, else both.
    pub fn text_for(&self, setting: Language) -> Cow<'static, str> {
        both(setting, |l| self.text(l))
    }
}

/// `text` in the fixed language, else in both (English first).
fn both(setting: Language, text: impl Fn(Lang) -> Cow<'static, str>) -> Cow<'static, str> {
    match setting.fixed() {
        Some(lang) => text(lang),
        None => format!("{}\n{}", text(Lang::En), text(Lang::ZhCn)).into(),
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

    #[test]
    fn a_wait_names_the_route_how_long_why_and_the_fix_in_both_languages() {
        let w = RouteWaiting {
            route: "chat:phone".into(),
            platform: "ChatApp",
            minutes: 12,
            why: WaitWhy::SendWindow,
            fix: WaitFix::WriteThere,
        };
        assert_eq!(
            w.text(Lang::En),
            "⚠️ chat:phone: replies waiting 12 min: ChatApp's send window is closed; fix: write any message in that chat to open it"
        );
        assert_eq!(
            w.text(Lang::ZhCn),
            "⚠️ chat:phone：回复已等待 12 分钟：ChatApp 的发送窗口已关闭；修复：在那个聊天里发任意一条消息即可打开"
        );
        let down = RouteWaiting {
            why: WaitWhy::AccountDown,
            fix: WaitFix::Command("scv-bridge status".into()),
            ..w
        };
        assert!(
            down.text(Lang::En)
                .ends_with("the account is not running; fix: scv-bridge status")
        );
        let back = RouteBack {
            route: "chat:phone".into(),
        }
        .text_for(Language::default());
        assert!(
            back.contains("go out again") && back.contains("恢复"),
            "{back}"
        );
    }
}
