//! `/status`'s second line: the whole bridge in a few words, in the chat's language.

use std::borrow::Cow;

use super::Lang;
use crate::protocol::{ComponentHealth, ComponentState};

/// What `/status` says about the whole bridge. The daemon builds it from its health snapshot
/// at each `/status`; a pipeline without a daemon says only that it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bridge {
    /// No daemon behind the pipeline (tests, embedded use).
    Running,
    /// How many enabled accounts are connected, and which are not (id and state).
    Accounts {
        /// Connected accounts.
        connected: usize,
        /// Enabled accounts.
        enabled: usize,
        /// The enabled accounts not connected: (`wechat:home`, its state).
        troubled: Vec<(String, ComponentState)>,
    },
}

impl Bridge {
    /// The line for `components`, the daemon's health snapshot (disabled accounts left out).
    pub fn of(components: &[ComponentHealth]) -> Bridge {
        let enabled: Vec<_> = components.iter().filter(|c| c.enabled).collect();
        let troubled: Vec<_> = enabled
            .iter()
            .filter(|c| c.state != ComponentState::Connected)
            .map(|c| (c.id.to_string(), c.state))
            .collect();
        Bridge::Accounts {
            connected: enabled.len() - troubled.len(),
            enabled: enabled.len(),
            troubled,
        }
    }

    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        let (connected, enabled, troubled) = match self {
            Bridge::Running => {
                return match lang {
                    Lang::En => "bridge: running".into(),
                    Lang::ZhCn => "桥接：运行中".into(),
                };
            }
            Bridge::Accounts {
                connected,
                enabled,
                troubled,
            } => (connected, enabled, troubled),
        };
        let list = |name: fn(ComponentState) -> &'static str, sep: &str| {
            troubled
                .iter()
                .map(|(id, s)| format!("{id} {}", name(*s)))
                .collect::<Vec<_>>()
                .join(sep)
        };
        match lang {
            Lang::En => {
                let mut line = format!("bridge: {connected} of {enabled} accounts connected");
                if !troubled.is_empty() {
                    line.push_str(&format!(" ({})", list(ComponentState::as_str, ", ")));
                }
                line.into()
            }
            Lang::ZhCn => {
                let mut line = format!("桥接：{enabled} 个账号中 {connected} 个已连接");
                if !troubled.is_empty() {
                    line.push_str(&format!("（{}）", list(state_zh, "，")));
                }
                line.into()
            }
        }
    }
}

/// A component state's Chinese name.
pub(super) fn state_zh(state: ComponentState) -> &'static str {
    match state {
        ComponentState::Disabled => "已停用",
        ComponentState::Starting => "启动中",
        ComponentState::Connected => "已连接",
        ComponentState::Disconnected => "已断开",
        ComponentState::Backoff => "等待重连",
        ComponentState::Stopping => "正在停止",
        ComponentState::Stopped => "已停止",
        ComponentState::Failed => "出错",
        ComponentState::Unknown => "未知",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn troubled_accounts_are_named_in_both_languages() {
        let b = Bridge::Accounts {
            connected: 1,
            enabled: 2,
            troubled: vec![("feishu:work".into(), ComponentState::Backoff)],
        };
        assert_eq!(
            b.text(Lang::En),
            "bridge: 1 of 2 accounts connected (feishu:work backoff)"
        );
        assert_eq!(
            b.text(Lang::ZhCn),
            "桥接：2 个账号中 1 个已连接（feishu:work 等待重连）"
        );
        assert_eq!(Bridge::Running.text(Lang::ZhCn), "桥接：运行中");
    }
}
