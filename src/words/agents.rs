//! What a chat reads about its agents (`/agent`, `/status`'s agent line), about a burst `/stop`
//! dropped, and the note on a message sent while the bridge was away.

use std::borrow::Cow;

use super::Lang;

/// A line about the chat's agents or its waiting messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentWords {
    /// `/agent`: the agents this chat may use, the one answering now marked.
    List {
        /// The agent answering this chat now.
        current: String,
        /// Every agent this chat may use, `default` first.
        names: Vec<String>,
    },
    /// `/agent NAME` switched this chat.
    Switched {
        /// The agent now answering.
        name: String,
    },
    /// `/agent NAME` named no agent this chat may use.
    Unknown {
        /// What was asked for.
        name: String,
        /// The agents there are.
        names: Vec<String>,
    },
    /// `/agent NAME` could not be kept (the store failed).
    NotKept {
        /// What failed.
        error: String,
    },
    /// `/status`'s line naming the agent that answers this chat.
    Now {
        /// Its name.
        name: String,
    },
    /// The one-line answer to a message that waited past `[chats] away_minutes`.
    Away {
        /// The bound, in minutes.
        minutes: u64,
    },
    /// `/stop` also dropped messages that waited behind the running answer.
    DroppedWaiting {
        /// How many.
        count: usize,
    },
}

impl AgentWords {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match lang {
            Lang::En => self.en(),
            Lang::ZhCn => self.zh(),
        }
    }

    fn en(&self) -> Cow<'static, str> {
        match self {
            AgentWords::List { current, names } => format!(
                "Agents: {}. This chat talks to {current}; switch with /agent NAME.",
                names.join(", ")
            )
            .into(),
            AgentWords::Switched { name } => format!(
                "This chat now talks to {name}; its earlier conversation with {name} goes on."
            )
            .into(),
            AgentWords::Unknown { name, names } => format!(
                "There is no agent named {name}. Agents: {}; send /agent NAME with one of them.",
                names.join(", ")
            )
            .into(),
            AgentWords::NotKept { error } => format!(
                "Could not switch the agent: {error}. Send the command again; if it fails again, check `scv-bridge status`."
            )
            .into(),
            AgentWords::Now { name } => format!("Agent: {name}").into(),
            AgentWords::Away { minutes } => format!(
                "(This message was sent while the bridge was away, more than {minutes} minutes ago, so it was not passed on; send it again if it still matters.)"
            )
            .into(),
            AgentWords::DroppedWaiting { count } => format!(
                "{count} message{} sent before /stop will not be answered.",
                if *count == 1 { "" } else { "s" }
            )
            .into(),
        }
    }

    fn zh(&self) -> Cow<'static, str> {
        match self {
            AgentWords::List { current, names } => format!(
                "可用的智能体：{}。这个对话现在使用 {current}；发送 /agent NAME 切换。",
                names.join("、")
            )
            .into(),
            AgentWords::Switched { name } => {
                format!("这个对话现在使用 {name}；与 {name} 之前的对话会继续。").into()
            }
            AgentWords::Unknown { name, names } => format!(
                "没有名为 {name} 的智能体。可用的有：{}；请发送 /agent NAME 选择其中一个。",
                names.join("、")
            )
            .into(),
            AgentWords::NotKept { error } => format!(
                "无法切换智能体：{error}。请再发送一次命令；如果仍然失败，请检查 `scv-bridge status`。"
            )
            .into(),
            AgentWords::Now { name } => format!("智能体：{name}").into(),
            AgentWords::Away { minutes } => format!(
                "（这条消息是在桥接程序离线期间发送的，已超过 {minutes} 分钟，因此没有转交；如果仍然需要，请重新发送。）"
            )
            .into(),
            AgentWords::DroppedWaiting { count } => {
                format!("在 /stop 之前发送的 {count} 条消息将不会得到回答。").into()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_has_both_languages_and_keeps_commands() {
        let names = vec!["default".to_string(), "claude".to_string()];
        let all = [
            AgentWords::List {
                current: "claude".into(),
                names: names.clone(),
            },
            AgentWords::Switched {
                name: "claude".into(),
            },
            AgentWords::Unknown {
                name: "gpt".into(),
                names,
            },
            AgentWords::NotKept {
                error: "disk full".into(),
            },
            AgentWords::Now {
                name: "claude".into(),
            },
            AgentWords::Away { minutes: 10 },
            AgentWords::DroppedWaiting { count: 2 },
        ];
        for w in all {
            let (en, zh) = (w.text(Lang::En), w.text(Lang::ZhCn));
            assert_ne!(en, zh, "{w:?}");
            assert!(!en.is_empty() && !zh.is_empty(), "{w:?}");
            if en.contains("/agent") {
                assert!(zh.contains("/agent"), "{w:?}: {zh}");
            }
        }
    }
}
