//! The mail digest's own words (its heading, the budget notice, how to reply); the mail lines
//! themselves are the senders' and subjects as they are.

use std::borrow::Cow;

use super::Lang;

/// A line of the digest the bridge writes itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Digest {
    /// `Mail digest (work): 3 new`: names it a digest, as it may share a chat with the agent.
    Heading {
        /// The mail account's name.
        account: String,
        /// How many items follow.
        count: usize,
    },
    /// Mail the day's model budget did not cover.
    Untriaged {
        /// How many.
        count: u64,
    },
    /// How to answer an item (`/reply N <text>`).
    ReplyHint,
}

impl Digest {
    /// The text in `lang`.
    pub fn text(&self, lang: Lang) -> Cow<'static, str> {
        match (lang, self) {
            (Lang::En, Digest::Heading { account, count }) => {
                format!("Mail digest ({account}): {count} new").into()
            }
            (Lang::En, Digest::Untriaged { count }) => {
                let noun = if *count == 1 { "mail" } else { "mails" };
                format!("{count} {noun} not triaged today: budget spent").into()
            }
            (Lang::En, Digest::ReplyHint) => "Reply with /reply N <text> to answer item N.".into(),
            (Lang::ZhCn, Digest::Heading { account, count }) => {
                format!("邮件摘要（{account}）：{count} 封新邮件").into()
            }
            (Lang::ZhCn, Digest::Untriaged { count }) => {
                format!("今日额度已用完，还有 {count} 封邮件未整理").into()
            }
            (Lang::ZhCn, Digest::ReplyHint) => "回复 /reply N <内容> 即可回复第 N 封。".into(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One of every digest text.
    pub(crate) fn every() -> Vec<Digest> {
        vec![
            Digest::Heading {
                account: "work".into(),
                count: 2,
            },
            Digest::Untriaged { count: 1 },
            Digest::Untriaged { count: 3 },
            Digest::ReplyHint,
        ]
    }
}
