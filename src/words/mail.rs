//! The mail chat's answers (`/digest`, `/reply`, the yes/no of a drafted reply). Commands and
//! error codes stay untranslated in the Chinese; addresses and the owner's text are as written.

use std::borrow::Cow;

use super::Lang;

/// An answer the mail chat writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailChat {
    /// What the mail chat's commands do (any other text in a mail-only chat).
    Help,
    /// No mail account names this chat in `report_to`.
    NoAccount,
    /// The drafted reply was dropped on the owner's no.
    NotSent,
    /// A yes/no with no draft waiting.
    NoReplyWaiting,
    /// `/digest` after the day's `max_digests_per_day`.
    DigestCap,
    /// `/digest` with nothing waiting.
    NothingNew,
    /// `/reply` without a number and a text.
    ReplyUsage,
    /// `/reply` before any digest was sent.
    NoDigestYet,
    /// `/reply N` naming an item the last digest does not have.
    NoItem {
        /// The item asked for.
        n: u32,
    },
    /// The mail account has no stored password.
    NotLoggedIn,
    /// The mail account has no `smtp_host`.
    RepliesOff,
    /// The original mail was moved or deleted.
    MailGone,
    /// Fetching the original failed.
    FetchFailed {
        /// The mail error's code.
        code: String,
    },
    /// Building the reply failed.
    DraftFailed {
        /// The mail error's code.
        code: String,
    },
    /// The draft could not be stored.
    DraftNotStored,
    /// The question before a reply goes out.
    Question {
        /// Who receives it.
        recipient: String,
        /// The reply's text, as the owner wrote it.
        body: String,
    },
    /// Sent and saved to the Sent folder.
    SentSaved,
    /// Sent (the server has no Sent folder).
    Sent,
    /// Sent, but saving to Sent failed.
    SentNotSaved {
        /// The mail error's code.
        code: String,
    },
    /// A transient SMTP failure: the draft waits for another yes.
    NotSentYet {
        /// The mail error's code.
        code: String,
    },
    /// The SMTP server refused the reply for good; the draft is dropped.
    Refused {
        /// The mail error's code.
        code: String,
    },
}

impl MailChat {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match lang {
            Lang::En => self.en(),
            Lang::ZhCn => self.zh(),
        }
    }

    fn en(&self) -> Cow<'static, str> {
        match self {
            MailChat::Help => {
                "Mail chat: /digest sends what is waiting now; /reply N <text> answers \
item N of the last digest (you confirm before it is sent)."
                    .into()
            }
            MailChat::NoAccount => "No mail account reports to this chat.".into(),
            MailChat::NotSent => "Not sent.".into(),
            MailChat::NoReplyWaiting => "No reply is waiting for confirmation.".into(),
            MailChat::DigestCap => {
                "Today's digest limit is reached; the rest comes tomorrow.".into()
            }
            MailChat::NothingNew => "Nothing new.".into(),
            MailChat::ReplyUsage => "Usage: /reply N <text>".into(),
            MailChat::NoDigestYet => "No digest has been sent yet.".into(),
            MailChat::NoItem { n } => format!("The last digest has no item {n}.").into(),
            MailChat::NotLoggedIn => "The mail account is not logged in.".into(),
            MailChat::RepliesOff => "Replies are off for this account (no smtp_host).".into(),
            MailChat::MailGone => "That mail is no longer in the mailbox.".into(),
            MailChat::FetchFailed { code } => {
                format!("Could not fetch that mail ({code}); try again later.").into()
            }
            MailChat::DraftFailed { code } => format!("Could not draft the reply ({code}).").into(),
            MailChat::DraftNotStored => "Could not store the draft; try again.".into(),
            MailChat::Question { recipient, body } => {
                format!("Send this reply to {recipient}? (yes/no)\n\n{body}").into()
            }
            MailChat::SentSaved => "Sent (saved to Sent).".into(),
            MailChat::Sent => "Sent.".into(),
            MailChat::SentNotSaved { code } => {
                format!("Sent, but not saved to Sent ({code}).").into()
            }
            MailChat::NotSentYet { code } => {
                format!("Not sent yet ({code}); answer yes again to retry.").into()
            }
            MailChat::Refused { code } => format!("The server refused the reply ({code}).").into(),
        }
    }

    fn zh(&self) -> Cow<'static, str> {
        match self {
            MailChat::Help => {
                "邮件对话：/digest 立即发送待看的邮件摘要；/reply N <内容> 回复上一份摘要\
的第 N 封（发送前会请你确认）。"
                    .into()
            }
            MailChat::NoAccount => "没有邮件账号向这个对话汇报。".into(),
            MailChat::NotSent => "未发送。".into(),
            MailChat::NoReplyWaiting => "没有等待确认的回复。".into(),
            MailChat::DigestCap => "今天的摘要次数已用完，其余的明天发送。".into(),
            MailChat::NothingNew => "没有新邮件。".into(),
            MailChat::ReplyUsage => "用法：/reply N <内容>".into(),
            MailChat::NoDigestYet => "还没有发送过邮件摘要。".into(),
            MailChat::NoItem { n } => format!("上一份摘要中没有第 {n} 封。").into(),
            MailChat::NotLoggedIn => "邮件账号尚未登录。".into(),
            MailChat::RepliesOff => "该账号未开启回复（没有配置 smtp_host）。".into(),
            MailChat::MailGone => "这封邮件已不在邮箱中。".into(),
            MailChat::FetchFailed { code } => {
                format!("无法取回这封邮件（{code}），请稍后再试。").into()
            }
            MailChat::DraftFailed { code } => format!("无法生成回复草稿（{code}）。").into(),
            MailChat::DraftNotStored => "无法保存草稿，请重试。".into(),
            MailChat::Question { recipient, body } => {
                format!("要把这封回复发给 {recipient} 吗？（是/否）\n\n{body}").into()
            }
            MailChat::SentSaved => "已发送（已存入“已发送”）。".into(),
            MailChat::Sent => "已发送。".into(),
            MailChat::SentNotSaved { code } => {
                format!("已发送，但未能存入“已发送”（{code}）。").into()
            }
            MailChat::NotSentYet { code } => {
                format!("暂未发送（{code}），再回复“是”即可重试。").into()
            }
            MailChat::Refused { code } => format!("邮件服务器拒绝了这封回复（{code}）。").into(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One of every mail-chat answer.
    pub(crate) fn every() -> Vec<MailChat> {
        let code = || "mail.smtp_rejected".to_string();
        vec![
            MailChat::Help,
            MailChat::NoAccount,
            MailChat::NotSent,
            MailChat::NoReplyWaiting,
            MailChat::DigestCap,
            MailChat::NothingNew,
            MailChat::ReplyUsage,
            MailChat::NoDigestYet,
            MailChat::NoItem { n: 4 },
            MailChat::NotLoggedIn,
            MailChat::RepliesOff,
            MailChat::MailGone,
            MailChat::FetchFailed { code: code() },
            MailChat::DraftFailed { code: code() },
            MailChat::DraftNotStored,
            MailChat::Question {
                recipient: "a@example.com".into(),
                body: "Thanks".into(),
            },
            MailChat::SentSaved,
            MailChat::Sent,
            MailChat::SentNotSaved { code: code() },
            MailChat::NotSentYet { code: code() },
            MailChat::Refused { code: code() },
        ]
    }

    #[test]
    fn commands_stay_untranslated_in_the_chinese() {
        for m in [MailChat::Help, MailChat::ReplyUsage] {
            let zh = m.text(Lang::ZhCn);
            assert!(zh.contains("/reply N"), "{zh}");
        }
    }
}
