//! The owner's questions in both languages: the question, the replies to answers and the notices
//! when a question closes. Codes and the `Y`/`N` answers stay as they are in the Chinese.

use std::borrow::Cow;

use super::Lang;
use crate::protocol::ConfirmState;

/// How many characters of a question a notice quotes.
pub const QUOTE_CHARS: usize = 60;

/// A text about an owner's question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// The question message: the question, then how to answer and by when.
    Question {
        /// The question as asked.
        question: String,
        /// Its short code (`7F`).
        code: String,
        /// The deadline as shown ([`Ask::Deadline`]).
        deadline: String,
        /// "Always" is offered beside yes and no (an agent's tool question).
        always: bool,
    },
    /// A deadline: `14:30`, a time tomorrow, or a full date and time.
    Deadline {
        /// `HH:MM`.
        hm: String,
        /// Days from today in the shown zone; 2 or more shows `date`.
        days: i64,
        /// `YYYY-MM-DD HH:MM`.
        date: String,
    },
    /// The reply to an answer that was recorded.
    Recorded {
        /// Yes or no.
        state: ConfirmState,
        /// The question's code.
        code: String,
    },
    /// The reply to an "always" answer that was recorded.
    RecordedAlways {
        /// The question's code.
        code: String,
    },
    /// The reply to an answer for a question that is already closed.
    AlreadyClosed {
        /// How it closed.
        state: ConfirmState,
        /// The question's code.
        code: String,
    },
    /// The reply to a bare answer when several questions wait: `(code, question)` each.
    Which {
        /// The waiting questions.
        pending: Vec<(String, String)>,
    },
    /// The reply to a bare yes/no that open questions and a drafted mail reply both wait for.
    WhichWithMail {
        /// The waiting questions.
        pending: Vec<(String, String)>,
    },
    /// The notice when a question closes.
    Closed {
        /// How it closed.
        state: ConfirmState,
        /// The question as asked.
        question: String,
        /// Its code.
        code: String,
    },
    /// The question before an agent runs a tool (`approvals = "ask"`).
    Tool {
        /// The tool or command line, on one line; empty when the agent named none.
        tool: String,
        /// The agent's risk label, when it gave one.
        risk: Option<String>,
        /// What the call will do, in the agent's words (bounded); may be empty.
        summary: String,
    },
    /// An answer that could not be stored.
    NotRecorded,
    /// An answer in a chat with no open question.
    NoOpenQuestion,
    /// An answer in the chat a pending question left for the owner's next route: it does not
    /// count here.
    Moved {
        /// Its code.
        code: String,
        /// `<channel>:<account>` it moved to.
        route: String,
    },
}

/// A short quote of the question for notices.
pub fn quote(q: &str) -> String {
    let one_line = q.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= QUOTE_CHARS {
        return format!("“{one_line}”");
    }
    let cut: String = one_line.chars().take(QUOTE_CHARS - 1).collect();
    format!("“{cut}…”")
}

/// The spelling of an answer state for people.
pub fn answer_word(state: ConfirmState, lang: Lang) -> &'static str {
    use ConfirmState as S;
    match (lang, state) {
        (Lang::En, S::Yes) => "yes",
        (Lang::En, S::No) => "no",
        (Lang::En, S::Pending) => "pending",
        (Lang::En, S::Expired) => "expired",
        (Lang::En, S::Withdrawn) => "withdrawn",
        (Lang::En, S::Failed) => "failed",
        (Lang::En, S::Unknown) => "unknown",
        (Lang::ZhCn, S::Yes) => "同意",
        (Lang::ZhCn, S::No) => "拒绝",
        (Lang::ZhCn, S::Pending) => "待回复",
        (Lang::ZhCn, S::Expired) => "已过期",
        (Lang::ZhCn, S::Withdrawn) => "已撤回",
        (Lang::ZhCn, S::Failed) => "未送达",
        (Lang::ZhCn, S::Unknown) => "未知",
    }
}

impl Ask {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match lang {
            Lang::En => self.en().into(),
            Lang::ZhCn => self.zh().into(),
        }
    }

    fn en(&self) -> String {
        use ConfirmState as S;
        let w = |s| answer_word(s, Lang::En);
        match self {
            Ask::Question {
                question,
                code,
                deadline,
                always: false,
            } => format!("{question}\nReply Y {code} or N {code} before {deadline}"),
            Ask::Question {
                question,
                code,
                deadline,
                always: true,
            } => format!(
                "{question}\nReply Y {code} (this once), A {code} (always, for the rest of this \
                 session) or N {code} before {deadline}"
            ),
            Ask::Deadline { hm, days, date } => match days {
                d if *d <= 0 => hm.clone(),
                1 => format!("{hm} tomorrow"),
                _ => date.clone(),
            },
            Ask::Recorded { state, code } => format!("Got it: {} ({code}).", w(*state)),
            Ask::RecordedAlways { code } => {
                format!("Got it: yes, always for this session ({code}).")
            }
            Ask::AlreadyClosed { state, code } => match state {
                S::Yes | S::No => format!("Already answered: {} ({code}).", w(*state)),
                S::Expired => format!("That question ({code}) has expired; no answer is needed."),
                S::Withdrawn => {
                    format!("That question ({code}) was withdrawn; no answer is needed.")
                }
                _ => format!("That question ({code}) is closed; no answer is needed."),
            },
            Ask::Which { pending } => {
                let (list, first) = listed(pending);
                format!(
                    "Which question? {} are waiting: {list}. Reply Y {first} or N {first} with the code.",
                    pending.len()
                )
            }
            Ask::WhichWithMail { pending } => {
                let (list, first) = listed(pending);
                format!(
                    "Which one? A mail reply waits to be sent, and a question too: {list}. \
                     For the mail reply send /reply yes or /reply no; for the question Y {first} or N {first}."
                )
            }
            Ask::Closed {
                state,
                question,
                code,
            } => {
                let q = quote(question);
                match state {
                    S::Yes | S::No => format!("Answered {}: {q} ({code}).", w(*state)),
                    S::Expired => {
                        format!("No answer before the deadline, so it counts as no: {q} ({code}).")
                    }
                    S::Withdrawn => {
                        format!("This no longer needs an answer (withdrawn): {q} ({code}).")
                    }
                    _ => format!(
                        "This no longer needs an answer (it could not be delivered in time): {q} ({code})."
                    ),
                }
            }
            Ask::Tool {
                tool,
                risk,
                summary,
            } => {
                let tool = if tool.is_empty() { "a tool" } else { tool };
                let risk = risk
                    .as_ref()
                    .map(|r| format!(" (risk: {r})"))
                    .unwrap_or_default();
                with_summary(format!("Allow the agent to run {tool}{risk}?"), summary)
            }
            Ask::NotRecorded => {
                "Sorry, your answer could not be recorded; please send it again.".into()
            }
            Ask::NoOpenQuestion => "There is no open question here.".into(),
            Ask::Moved { code, route } => format!(
                "That question ({code}) moved to {route}, because it could not reach you here; answer it there. Your answer here was not counted."
            ),
        }
    }

    fn zh(&self) -> String {
        use ConfirmState as S;
        let w = |s| answer_word(s, Lang::ZhCn);
        match self {
            Ask::Question {
                question,
                code,
                deadline,
                always: false,
            } => format!("{question}\n请在 {deadline} 前回复 Y {code}（同意）或 N {code}（拒绝）"),
            Ask::Question {
                question,
                code,
                deadline,
                always: true,
            } => format!(
                "{question}\n请在 {deadline} 前回复 Y {code}（仅同意这一次）、A {code}（本次会话中总是同意）或 N {code}（拒绝）"
            ),
            Ask::Deadline { hm, days, date } => match days {
                d if *d <= 0 => hm.clone(),
                1 => format!("明天 {hm}"),
                _ => date.clone(),
            },
            Ask::Recorded { state, code } => format!("收到，已记录：{}（{code}）。", w(*state)),
            Ask::RecordedAlways { code } => format!("收到，已记录：本次会话中总是同意（{code}）。"),
            Ask::AlreadyClosed { state, code } => match state {
                S::Yes | S::No => format!("这个问题已经回答过了：{}（{code}）。", w(*state)),
                S::Expired => format!("问题 {code} 已过期，无需再回答。"),
                S::Withdrawn => format!("问题 {code} 已撤回，无需再回答。"),
                _ => format!("问题 {code} 已关闭，无需再回答。"),
            },
            Ask::Which { pending } => {
                let (list, first) = listed(pending);
                format!(
                    "要回答哪个问题？有 {} 个问题在等待：{list}。请带上编号回复，例如 Y {first} 或 N {first}。",
                    pending.len()
                )
            }
            Ask::WhichWithMail { pending } => {
                let (list, first) = listed(pending);
                format!(
                    "要回答哪一个？有一封邮件回复在等待发送，还有问题在等待：{list}。\
                     邮件回复请发 /reply 是 或 /reply 否；问题请回复 Y {first} 或 N {first}。"
                )
            }
            Ask::Closed {
                state,
                question,
                code,
            } => {
                let q = quote(question);
                match state {
                    S::Yes => format!("已同意：{q}（{code}）。"),
                    S::No => format!("已拒绝：{q}（{code}）。"),
                    S::Expired => format!("截止前未收到回复，按拒绝处理：{q}（{code}）。"),
                    S::Withdrawn => format!("此问题已撤回，无需再回答：{q}（{code}）。"),
                    _ => format!("此问题未能及时送达，无需再回答：{q}（{code}）。"),
                }
            }
            Ask::Tool {
                tool,
                risk,
                summary,
            } => {
                let tool = if tool.is_empty() {
                    "一个工具"
                } else {
                    tool
                };
                let risk = risk
                    .as_ref()
                    .map(|r| format!("（风险：{r}）"))
                    .unwrap_or_else(|| " ".into());
                with_summary(format!("允许智能体运行 {tool}{risk}吗？"), summary)
            }
            Ask::NotRecorded => "抱歉，你的回答没能记录下来，请再发一次。".into(),
            Ask::NoOpenQuestion => "这里没有待回答的问题。".into(),
            Ask::Moved { code, route } => {
                format!(
                    "这个问题（{code}）在这里发不出去，已转到 {route}，请在那里回答。这里的回答不算数。"
                )
            }
        }
    }
}

/// `line`, then `summary` on the next line when there is one.
fn with_summary(line: String, summary: &str) -> String {
    if summary.is_empty() {
        line
    } else {
        format!("{line}\n{summary}")
    }
}

/// `7F “Deploy?”, 8A “Restart?”` and the first code (an example code when there is none).
fn listed(pending: &[(String, String)]) -> (String, &str) {
    let list: Vec<String> = pending
        .iter()
        .map(|(code, q)| format!("{code} {}", quote(q)))
        .collect();
    let first = pending.first().map_or("7F", |(c, _)| c.as_str());
    (list.join(", "), first)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One of every question text, every state where the text depends on it.
    pub(crate) fn every() -> Vec<Ask> {
        let states = [
            ConfirmState::Yes,
            ConfirmState::No,
            ConfirmState::Expired,
            ConfirmState::Withdrawn,
            ConfirmState::Failed,
        ];
        let mut all = vec![
            Ask::Question {
                question: "Deploy?".into(),
                code: "7F".into(),
                deadline: "14:30".into(),
                always: false,
            },
            Ask::Deadline {
                hm: "14:30".into(),
                days: 1,
                date: "2025-12-03 14:30".into(),
            },
            Ask::Which {
                pending: vec![
                    ("7F".into(), "Deploy?".into()),
                    ("8A".into(), "Restart?".into()),
                ],
            },
            Ask::WhichWithMail {
                pending: vec![("7F".into(), "Deploy?".into())],
            },
            Ask::Tool {
                tool: "cargo test".into(),
                risk: Some("execute".into()),
                summary: "in /srv/proj".into(),
            },
            Ask::Question {
                question: "Run cargo test?".into(),
                code: "7F".into(),
                deadline: "14:30".into(),
                always: true,
            },
            Ask::RecordedAlways { code: "7F".into() },
            Ask::NotRecorded,
            Ask::NoOpenQuestion,
            Ask::Moved {
                code: "7F".into(),
                route: "chat:work".into(),
            },
        ];
        for state in states {
            let code = "7F".to_string();
            all.push(Ask::Recorded {
                state,
                code: code.clone(),
            });
            all.push(Ask::AlreadyClosed {
                state,
                code: code.clone(),
            });
            all.push(Ask::Closed {
                state,
                question: "Deploy?".into(),
                code,
            });
        }
        all
    }

    #[test]
    fn the_english_is_as_it_was() {
        let q = Ask::Question {
            question: "Deploy?".into(),
            code: "7F".into(),
            deadline: "14:30".into(),
            always: false,
        };
        assert_eq!(q.text(Lang::En), "Deploy?\nReply Y 7F or N 7F before 14:30");
        assert_eq!(
            q.text(Lang::ZhCn),
            "Deploy?\n请在 14:30 前回复 Y 7F（同意）或 N 7F（拒绝）"
        );
    }
}
