//! The message catalogue: one variant per text a person reads in a chat, both languages side by
//! side. Arguments are fields; commands and codes stay untranslated in the Chinese.

use std::borrow::Cow;

use super::Lang;
use super::bridge::{Bridge, state_zh};
use crate::protocol::ComponentState;

/// A text the bridge writes to a person in a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Msg {
    /// The answer to `/help`.
    Help,
    /// `/stop` cancelled the running answer.
    Stopped,
    /// `/stop` with nothing running.
    NothingRunning,
    /// The media of the owner's message are still downloading: the answer (and the chat's
    /// next messages) wait for them.
    StillDownloading {
        /// How many items the message carries.
        items: usize,
    },
    /// A mail command (or a drafted reply's yes/no) in a chat no mail account reports to, or
    /// before the mail accounts started: it was not handled.
    MailChatNotReady,
    /// `/new` reset the conversation.
    FreshConversation,
    /// About voice: `/voice` and a voice note that was not transcribed.
    Voice(super::voice::Voice),
    /// `/new` failed; `error` says why.
    FreshFailed {
        /// What failed.
        error: String,
    },
    /// `/status`: the account's state (and its error when not connected), then the bridge's line.
    Status {
        /// The account (`wechat:home`).
        id: String,
        /// The account's state.
        state: ComponentState,
        /// The account's error, when it is not connected.
        error: Option<String>,
        /// The whole bridge's line.
        bridge: Bridge,
    },
    /// The agent is down; the owner's message is kept.
    AgentDown {
        /// Why the agent is not answering.
        reason: String,
    },
    /// The start of the reply to a message cut to what the agent is handed.
    MessageCut {
        /// The message's size (`10.0 MiB`).
        original: String,
        /// What the agent read (`32 KiB`).
        max: String,
    },
    /// The pairing code was right: the sender is now the bot's owner.
    Paired,
    /// Links were rewritten so the platform would take the message (QQ refuses URLs).
    LinksDefanged {
        /// How many.
        count: usize,
    },
    /// The agent failed one turn for good.
    AgentFailed {
        /// Why.
        reason: String,
    },
    /// A coding agent stopped its turn because a tool call was refused (or not answered in time).
    AgentStoppedAfterNo,
    /// The agent could not continue the chat's earlier conversation; this answer starts afresh.
    AgentSessionLost,
    /// A long turn has been silent for a while; `doing` is the agent's last status line.
    StillWorking {
        /// What the agent said it is doing ("running tests"), when it said.
        doing: Option<String>,
    },
    /// A photo or file the owner sent was not passed on (one line before the answer).
    MediaNotSaved {
        /// What it was (`photo.jpg`, `a photo`).
        item: String,
        /// Why.
        why: MediaSkip,
    },
    /// The agent stopped while answering one message `times` times: the message is given up.
    AgentEndedDropped {
        /// How many times it stopped.
        times: u32,
        /// Why it stopped the last time (operator words, English); the owner's chat only.
        reason: Option<String>,
    },
    /// The start of an answer longer than `[agent] max_answer_kib`: the rest is in a file.
    AnswerCut {
        /// What the chat shows (`64 KiB`).
        max: String,
        /// The workspace file holding the rest, sent after the answer; `None`: no workspace,
        /// the rest is left out.
        file: Option<String>,
    },
    /// A file the answer named was not sent.
    FileNotSent {
        /// The path as the answer wrote it.
        path: String,
        /// Why.
        why: FileRefused,
    },
    /// The state store cannot commit, so the account takes no new input until it can (the
    /// account's status note; `error` is the store's own words when the disk is not full).
    StorePaused {
        /// Whether the disk (or the database) is full.
        disk_full: bool,
        /// What the store said.
        error: String,
    },
    /// Feishu refused to create a streaming card (the account's status note): answers go out
    /// whole for an hour, then cards are tried again.
    CardsRefused {
        /// What Feishu said (its code and message).
        error: String,
    },
    /// The platform refused a streamed reply for this client (the owner's one note, and the
    /// account's status note while the run lasts): answers go out whole.
    StreamsRefused {
        /// The platform's code.
        code: i64,
    },
    /// One user has as many answers shown while written as the platform allows (the account's
    /// status note while it lasts): the next goes whole.
    StreamsBusy {
        /// The platform's limit.
        most: usize,
    },
}

/// How large a refused item is known to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemSize {
    /// The size the message declared (`150.0 MiB`), over the limit before any download.
    Declared(String),
    /// Unknown: the download stopped once more than the limit (`2.0 MiB`) had arrived.
    MoreThan(String),
}

/// Why a received item was not saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MediaSkip {
    /// Larger than `[media] max_item_mb` (or the account's own cap).
    TooLarge {
        /// Its size as known: declared (`150.0 MiB`), or only that more than the limit arrived.
        size: ItemSize,
        /// The limit.
        max: String,
        /// Where the limit is set (`[media] max_item_mb`).
        key: String,
    },
    /// The workspace's inbox is at `[media] max_workspace_mb` (or the account's own cap).
    WorkspaceFull {
        /// The limit.
        max: String,
        /// Where the limit is set (`[media] max_workspace_mb`).
        key: String,
    },
    /// The account has no workspace to save into.
    NoWorkspace,
    /// The download failed; `error` says why (operator words, English).
    Failed {
        /// What failed.
        error: String,
    },
}

/// Why a named file was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRefused {
    /// Outside the workspace (absolute, `..`, or a symlink out).
    Outside,
    /// No such file.
    Missing,
    /// The account has no workspace.
    NoWorkspace,
    /// The platform refused or the upload failed; `error` says why.
    Failed {
        /// What failed.
        error: String,
    },
}

impl Msg {
    /// The text for a chat whose reader's language is not known yet: the fixed language, and
    /// under `auto` both (English first), as for the pairing notice answering a bare code.
    pub fn text_for(&self, setting: super::Language) -> Cow<'static, str> {
        match setting.fixed() {
            Some(lang) => self.text(lang),
            None => format!("{}\n{}", self.text(Lang::En), self.text(Lang::ZhCn)).into(),
        }
    }

    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match lang {
            Lang::En => self.en(),
            Lang::ZhCn => self.zh(),
        }
    }

    fn en(&self) -> Cow<'static, str> {
        match self {
            Msg::Help => "Commands: /new starts a fresh conversation, /stop cancels the running answer, \
/status shows the bridge's health, /agent lists the agents (/agent NAME switches this chat), \
/voice on|off|auto answers by voice too (only in chat apps with voice messages; elsewhere answers \
stay text), /help shows this."
                .into(),
            Msg::Voice(v) => v.text(Lang::En),
            Msg::Stopped => "Stopped.".into(),
            Msg::NothingRunning => "Nothing is running.".into(),
            Msg::StillDownloading { items } => format!(
                "Still downloading what you sent ({items} item{}); the answer comes once it is in \
(a download that stops sending is given up).",
                if *items == 1 { "" } else { "s" }
            )
            .into(),
            Msg::MailChatNotReady => "No mail account reports to this chat (or none has started yet), so this was not \
handled. Check `scv-bridge status` and the mail account's report_to, then send it again."
                .into(),
            Msg::FreshConversation => "Started a fresh conversation.".into(),
            Msg::FreshFailed { error } => {
                format!("Could not start a fresh conversation: {error}").into()
            }
            Msg::Status {
                id,
                state,
                error,
                bridge,
            } => {
                let (state, bridge) = (state.as_str(), bridge.text(Lang::En));
                match error {
                    Some(e) => format!("{id}: {state} ({e})\n{bridge}").into(),
                    None => format!("{id}: {state}\n{bridge}").into(),
                }
            }
            Msg::AgentDown { reason } => format!(
                "The agent is not answering: {reason}. Your message is kept and will be answered when it is back."
            )
            .into(),
            Msg::AgentFailed { reason } => format!("The agent could not answer: {reason}").into(),
            Msg::StillWorking { doing: Some(d) } => format!("Still working: {d}").into(),
            Msg::StillWorking { doing: None } => "Still working…".into(),
            Msg::MessageCut { original, max } => {
                format!("(Your message was {original}; the agent read only its first {max}.)")
                    .into()
            }
            Msg::AgentStoppedAfterNo => {
                "Stopped: the command was not run. Tell me what to do instead.".into()
            }
            Msg::AgentSessionLost => {
                "(The agent could not continue the earlier conversation; this is a fresh one.)"
                    .into()
            }
            Msg::AgentEndedDropped { times, reason } => {
                let head = format!("The agent stopped while answering this, {times} times; it is dropped");
                match reason {
                    Some(r) => format!("{head}: {r}. Send it again in other words, or /new to start afresh.").into(),
                    None => format!("{head}. Send it again in other words.").into(),
                }
            }
            Msg::AnswerCut { max, file: Some(f) } => format!(
                "(The answer is longer than {max}: the rest is in the workspace file {f}, sent after this.)"
            )
            .into(),
            Msg::AnswerCut { max, file: None } => {
                format!("(The answer was longer than {max}; the rest is left out.)").into()
            }
            Msg::Paired => {
                "Paired: you are now the owner of this bot. What you write here goes to the agent."
                    .into()
            }
            Msg::LinksDefanged { count: 1 } => {
                "(QQ refuses links: the link above is written as example[.]com; copy it and remove the brackets.)".into()
            }
            Msg::LinksDefanged { count } => format!(
                "(QQ refuses links: the {count} links above are written as example[.]com; copy them and remove the brackets.)"
            )
            .into(),
            Msg::MediaNotSaved { item, why } => {
                let why = match why {
                    MediaSkip::TooLarge {
                        size: ItemSize::Declared(size),
                        max,
                        key,
                    } => format!("it is {size}, over the {max} limit (`{key}`)"),
                    MediaSkip::TooLarge {
                        size: ItemSize::MoreThan(read),
                        max,
                        key,
                    } => format!(
                        "it is larger than the {max} limit (`{key}`): the download stopped after {read}"
                    ),
                    MediaSkip::WorkspaceFull { max, key } => format!(
                        "the workspace inbox is full ({max}, `{key}`); delete old files in `inbox/`"
                    ),
                    MediaSkip::NoWorkspace => {
                        "this account has no workspace; set workspace in its table".to_string()
                    }
                    MediaSkip::Failed { error } => format!("the download failed: {error}"),
                };
                format!("({item} was not passed to the agent: {why}.)").into()
            }
            Msg::FileNotSent { path, why } => {
                let why = match why {
                    FileRefused::Outside => "it is outside the workspace".to_string(),
                    FileRefused::Missing => "there is no such file in the workspace".to_string(),
                    FileRefused::NoWorkspace => "this account has no workspace".to_string(),
                    FileRefused::Failed { error } => error.clone(),
                };
                format!("(Could not send {path}: {why}.)").into()
            }
            Msg::StorePaused {
                disk_full: true, ..
            } => "store: disk full; not reading new messages until space is freed".into(),
            Msg::StorePaused { error, .. } => format!(
                "store: cannot write ({error}); not reading new messages until it can"
            )
            .into(),
            Msg::CardsRefused { error } => format!(
                "cards: Feishu refused a streaming card ({error}); answers go out whole for an \
                 hour: grant the app the cardkit:card:write scope and publish a version"
            )
            .into(),
            Msg::StreamsRefused { code } => format!(
                "streams: the platform refused to show an answer while it is written (code \
                 {code}: this client cannot show it); answers arrive whole until the account \
                 restarts"
            )
            .into(),
            Msg::StreamsBusy { most } => format!(
                "streams: {most} answers to one person are being shown while written, the most \
                 the platform allows; the next arrives whole"
            )
            .into(),
        }
    }

    fn zh(&self) -> Cow<'static, str> {
        match self {
            Msg::Help => "可用命令：/new 开始新对话，/stop 停止当前回答，/status 查看桥接状态，/agent 列出智能体（/agent NAME 为这个对话切换），/voice on|off|auto 同时用语音回答（仅限支持语音消息的聊天应用，其他应用只回文字），/help 显示本帮助。".into(),
            Msg::Voice(v) => v.text(Lang::ZhCn),
            Msg::Stopped => "已停止。".into(),
            Msg::NothingRunning => "当前没有正在进行的回答。".into(),
            Msg::StillDownloading { items } => {
                format!("仍在下载你发来的内容（{items} 项）；下载完成后再回答（停止传输的下载会被放弃）。").into()
            }
            Msg::MailChatNotReady => "没有邮件账号向这个聊天汇报（或尚未启动），所以这条消息没有处理。请用 `scv-bridge status` \
查看，并检查邮件账号的 report_to，然后再发一次。"
                .into(),
            Msg::FreshConversation => "已开始新对话。".into(),
            Msg::FreshFailed { error } => format!("无法开始新对话：{error}").into(),
            Msg::Status {
                id,
                state,
                error,
                bridge,
            } => {
                let (state, bridge) = (state_zh(*state), bridge.text(Lang::ZhCn));
                match error {
                    Some(e) => format!("账号 {id}：{state}（{e}）\n{bridge}").into(),
                    None => format!("账号 {id}：{state}\n{bridge}").into(),
                }
            }
            Msg::AgentDown { reason } => {
                format!("智能体暂时无法回复：{reason}。你的消息已保存，恢复后会立即回复。").into()
            }
            Msg::AgentFailed { reason } => format!("智能体未能回复：{reason}").into(),
            Msg::StillWorking { doing: Some(d) } => format!("仍在处理：{d}").into(),
            Msg::StillWorking { doing: None } => "仍在处理…".into(),
            Msg::MessageCut { original, max } => {
                format!("（你的消息有 {original}，智能体只读取了前 {max}。）").into()
            }
            Msg::AgentStoppedAfterNo => "已停止：该命令没有执行。请告诉我接下来要怎么做。".into(),
            Msg::AgentSessionLost => "（智能体无法接续之前的对话，这是一段新对话。）".into(),
            Msg::AgentEndedDropped { times, reason } => {
                let head = format!("智能体在回答这条消息时停止了 {times} 次，这条消息已放弃");
                match reason {
                    Some(r) => format!("{head}：{r}。可以换个说法再发，或发送 /new 开始新对话。").into(),
                    None => format!("{head}。可以换个说法再发。").into(),
                }
            }
            Msg::AnswerCut { max, file: Some(f) } => {
                format!("（回答超过 {max}：其余部分在工作区文件 {f} 中，随后作为文件发送。）").into()
            }
            Msg::AnswerCut { max, file: None } => {
                format!("（回答超过 {max}，其余部分已省略。）").into()
            }
            Msg::Paired => "配对成功：你现在是这个机器人的主人，在这里发的消息会交给智能体处理。".into(),
            Msg::LinksDefanged { count } => format!(
                "（QQ 不允许发送链接：上文的 {count} 个链接已写成 example[.]com 的形式，复制后去掉方括号即可。）"
            )
            .into(),
            Msg::MediaNotSaved { item, why } => {
                let why = match why {
                    MediaSkip::TooLarge {
                        size: ItemSize::Declared(size),
                        max,
                        key,
                    } => format!("文件大小 {size}，超过 {max} 的上限（`{key}`）"),
                    MediaSkip::TooLarge {
                        size: ItemSize::MoreThan(read),
                        max,
                        key,
                    } => format!("文件超过 {max} 的上限（`{key}`），下载在 {read} 后停止"),
                    MediaSkip::WorkspaceFull { max, key } => format!(
                        "工作区收件箱已满（{max}，`{key}`），请删除 `inbox/` 中的旧文件"
                    ),
                    MediaSkip::NoWorkspace => "该账号没有配置 workspace".to_string(),
                    MediaSkip::Failed { error } => format!("下载失败：{error}"),
                };
                format!("（{item} 未交给智能体：{why}。）").into()
            }
            Msg::FileNotSent { path, why } => {
                let why = match why {
                    FileRefused::Outside => "它在工作区之外".to_string(),
                    FileRefused::Missing => "工作区中没有这个文件".to_string(),
                    FileRefused::NoWorkspace => "该账号没有配置 workspace".to_string(),
                    FileRefused::Failed { error } => error.clone(),
                };
                format!("（无法发送 {path}：{why}。）").into()
            }
            Msg::StorePaused {
                disk_full: true, ..
            } => "存储：磁盘已满；腾出空间之前不再读取新消息".into(),
            Msg::StorePaused { error, .. } => {
                format!("存储：无法写入（{error}）；恢复写入之前不再读取新消息").into()
            }
            Msg::CardsRefused { error } => format!(
                "卡片：飞书拒绝创建流式卡片（{error}）；一小时内回答整条发送：请为应用开通 \
                 cardkit:card:write 权限并发布版本"
            )
            .into(),
            Msg::StreamsRefused { code } => format!(
                "流式：平台拒绝边写边显示回答（错误码 {code}：该客户端无法显示）；账号重启前回答整条发送"
            )
            .into(),
            Msg::StreamsBusy { most } => format!(
                "流式：同一个人已有 {most} 条回答正在边写边显示，已达平台上限；下一条回答整条发送"
            )
            .into(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One of every message, with arguments that look like real ones.
    pub(crate) fn every() -> Vec<Msg> {
        vec![
            Msg::Help,
            Msg::Voice(super::super::voice::Voice::Usage),
            Msg::Stopped,
            Msg::NothingRunning,
            Msg::MailChatNotReady,
            Msg::StillDownloading { items: 2 },
            Msg::FreshConversation,
            Msg::FreshFailed {
                error: "timeout".into(),
            },
            Msg::Status {
                id: "wechat:home".into(),
                state: ComponentState::Connected,
                error: None,
                bridge: Bridge::Accounts {
                    connected: 1,
                    enabled: 1,
                    troubled: Vec::new(),
                },
            },
            Msg::Status {
                id: "wechat:home".into(),
                state: ComponentState::Disconnected,
                error: Some("network".into()),
                bridge: Bridge::Accounts {
                    connected: 0,
                    enabled: 1,
                    troubled: vec![("wechat:home".into(), ComponentState::Disconnected)],
                },
            },
            Msg::AgentDown {
                reason: "HTTP 503".into(),
            },
            Msg::AgentFailed {
                reason: "HTTP 400".into(),
            },
            Msg::AgentStoppedAfterNo,
            Msg::AgentSessionLost,
            Msg::StillWorking {
                doing: Some("running tests".into()),
            },
            Msg::StillWorking { doing: None },
            Msg::MediaNotSaved {
                item: "photo.jpg".into(),
                why: MediaSkip::TooLarge {
                    size: ItemSize::Declared("150.0 MiB".into()),
                    max: "100.0 MiB".into(),
                    key: "[media] max_item_mb".into(),
                },
            },
            Msg::MediaNotSaved {
                item: "photo.jpg".into(),
                why: MediaSkip::TooLarge {
                    size: ItemSize::MoreThan("100.0 MiB".into()),
                    max: "100.0 MiB".into(),
                    key: "[media] max_item_mb".into(),
                },
            },
            Msg::FileNotSent {
                path: "../x".into(),
                why: FileRefused::Outside,
            },
            Msg::StorePaused {
                disk_full: true,
                error: "database or disk is full".into(),
            },
            Msg::StorePaused {
                disk_full: false,
                error: "disk I/O error".into(),
            },
            Msg::AgentEndedDropped {
                times: 3,
                reason: Some(
                    "the agent process ended while answering (it exited: exit status: 3)".into(),
                ),
            },
            Msg::AgentEndedDropped {
                times: 3,
                reason: None,
            },
            Msg::AnswerCut {
                max: "64 KiB".into(),
                file: Some("answers/2026-05-01-1a2b.md".into()),
            },
            Msg::AnswerCut {
                max: "64 KiB".into(),
                file: None,
            },
            Msg::CardsRefused {
                error: "code 99991672: Access denied".into(),
            },
            Msg::StreamsRefused { code: 600039 },
            Msg::StreamsBusy { most: 3 },
        ]
    }

    #[test]
    fn commands_stay_untranslated_in_the_chinese_help() {
        let zh = Msg::Help.text(Lang::ZhCn);
        for c in ["/new", "/stop", "/status", "/help"] {
            assert!(zh.contains(c), "{c} missing from {zh}");
        }
    }
}
