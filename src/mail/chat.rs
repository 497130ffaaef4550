//! The owner's commands in the mail chat: `/digest`, `/reply N <text>`, and the yes/no that
//! confirms a drafted reply. Nothing here reaches a model, and no text is logged.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures_util::future::BoxFuture;
use scv_mail::{
    BuiltMessage, ErrorClass, ImapSession, MailAddress, SmtpSender, build_message, reply_to,
};
use tokio::sync::watch;

use super::Account;
use super::report::Flush;
use crate::config::AccountKey;
use crate::conversation::{AccountLink, ChatId, Inbound, MAIL_ACCOUNTS_START, MailChatHandler};
use crate::mail::triage::db::{self, PendingReply};
use crate::port::Relay;
use crate::words::{self, Lang, MailChat};

/// How the owner confirms a drafted reply. Today a stored pending reply answered with a plain
/// yes or no in the mail chat; a confirm question can implement this later.
pub trait ReplyConfirmation: Send + Sync + 'static {
    /// The question put to the owner, in `lang`.
    fn question(&self, recipient: &str, body: &str, lang: Lang) -> String;

    /// The owner's answer: yes, no, or `None` when the text is not an answer.
    fn answer(&self, text: &str) -> Option<bool>;
}

/// Yes/no typed in the chat: `yes`, `y`, `是` (and `no`, `n`, `否`).
pub struct TextConfirmation;

impl ReplyConfirmation for TextConfirmation {
    fn question(&self, recipient: &str, body: &str, lang: Lang) -> String {
        MailChat::Question {
            recipient: recipient.to_string(),
            body: body.to_string(),
        }
        .text(lang)
        .into_owned()
    }

    fn answer(&self, text: &str) -> Option<bool> {
        match text
            .trim()
            .trim_end_matches(['.', '!', '。', '！'])
            .to_lowercase()
            .as_str()
        {
            "yes" | "y" | "是" | "是的" | "好" => Some(true),
            "no" | "n" | "否" | "不" | "取消" => Some(false),
            _ => None,
        }
    }
}

/// Routes mail-chat messages to the mail accounts whose `report_to` is that chat's account.
/// Installed on the conversation once, by the first mail account that starts. In an ordinary
/// chat (`report_to` names one that also talks to the agent) it claims only `/digest`,
/// `/reply` and the yes/no of a drafted reply; everything else stays the agent's.
pub struct MailChatRouter {
    installed: AtomicBool,
    accounts: Mutex<Vec<Weak<Account>>>,
    /// (chat account, chat) pairs holding a drafted reply, so `wants` can claim a bare yes/no
    /// there without reading the store; seeded from the store when a mail account starts.
    pending: Mutex<HashSet<(AccountKey, String)>>,
    /// Bumped on every registration, so a message can wait for its chat's accounts to start.
    registered: watch::Sender<u64>,
    confirm: Arc<dyn ReplyConfirmation>,
}

impl MailChatRouter {
    /// A router confirming replies by text.
    pub fn new() -> Arc<Self> {
        Arc::new(MailChatRouter {
            installed: AtomicBool::new(false),
            accounts: Mutex::new(Vec::new()),
            pending: Mutex::new(HashSet::new()),
            registered: watch::channel(0).0,
            confirm: Arc::new(TextConfirmation),
        })
    }

    /// Adds (or replaces) a running account; installs the router on first use, after listing
    /// the account, so messages that waited for the handler find the account that installed it.
    pub(super) fn register(self: &Arc<Self>, conv: &Relay, acct: &Arc<Account>) {
        if let Ok(mut list) = self.accounts.lock() {
            list.retain(|w| w.upgrade().is_some_and(|a| a.key != acct.key));
            list.push(Arc::downgrade(acct));
        }
        self.registered.send_modify(|n| *n = n.wrapping_add(1));
        if !self.installed.swap(true, Ordering::SeqCst) {
            conv.set_mail_chat_handler(self.clone());
        }
    }

    /// Remembers the chats where `acct` holds a drafted reply (after a restart).
    pub(super) async fn seed_pending(&self, acct: &Arc<Account>) {
        let (Some(to), id) = (acct.report_to.clone(), acct.id.clone()) else {
            return;
        };
        if let Ok(chats) = acct
            .ctx
            .store
            .call(move |t| db::pending_chats(t, &id))
            .await
            && let Ok(mut p) = self.pending.lock()
        {
            p.extend(chats.into_iter().map(|c| (to.clone(), c)));
        }
    }

    /// Records whether some account reporting to `to` still holds a draft for `chat`.
    async fn refresh_pending(&self, accounts: &[Arc<Account>], to: &AccountKey, chat: &str) {
        let mut held = false;
        for a in accounts {
            let (id, c) = (a.id.clone(), chat.to_string());
            held |= matches!(
                a.ctx.store.call(move |t| db::pending(t, &id, &c)).await,
                Ok(Some(_))
            );
        }
        if let Ok(mut p) = self.pending.lock() {
            let k = (to.clone(), chat.to_string());
            if held {
                p.insert(k);
            } else {
                p.remove(&k);
            }
        }
    }

    fn reporting_to(&self, link: &AccountLink) -> Vec<Arc<Account>> {
        self.reporting_to_key(&link.account)
    }

    fn reporting_to_key(&self, to: &AccountKey) -> Vec<Arc<Account>> {
        let list = self.accounts.lock().map(|l| l.clone()).unwrap_or_default();
        list.iter()
            .filter_map(Weak::upgrade)
            .filter(|a| a.report_to.as_ref() == Some(to))
            .collect()
    }

    /// The accounts reporting to `link`, waiting (bounded) for the first to start: the chat
    /// may hand over the owner's message before the mail accounts have registered.
    async fn wait_reporting_to(&self, link: &AccountLink) -> Vec<Arc<Account>> {
        let mut changes = self.registered.subscribe();
        let deadline = tokio::time::Instant::now() + MAIL_ACCOUNTS_START;
        loop {
            let found = self.reporting_to(link);
            if !found.is_empty() {
                return found;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return found,
            }
        }
    }

    async fn answer(&self, link: &AccountLink, msg: &Inbound) -> String {
        let accounts = self.wait_reporting_to(link).await;
        let lang = chat_lang(&accounts, link, msg).await;
        if accounts.is_empty() {
            return MailChat::NoAccount.text(lang).into_owned();
        }
        match self.answer_in(&accounts, link, msg, lang).await {
            Answer::Said(m) => m.text(lang).into_owned(),
            Answer::Text(t) => t,
            Answer::Nothing => String::new(),
        }
    }

    async fn answer_in(
        &self,
        accounts: &[Arc<Account>],
        link: &AccountLink,
        msg: &Inbound,
        lang: Lang,
    ) -> Answer {
        let chat = msg.chat.as_str().to_string();
        let text = msg.text.trim();
        // A pending reply waits for yes/no first: bare, or as `/reply yes` (what the bridge
        // asks for when a confirm question in the chat waits for a yes/no too).
        let after_reply = text
            .get(..6)
            .filter(|p| p.eq_ignore_ascii_case("/reply"))
            .map(|_| text[6..].trim());
        let yes_no = self
            .confirm
            .answer(text)
            .or_else(|| after_reply.and_then(|rest| self.confirm.answer(rest)));
        if let Some(yes) = yes_no {
            for a in accounts {
                let (id, c) = (a.id.clone(), chat.clone());
                if let Ok(Some(p)) = a.ctx.store.call(move |t| db::pending(t, &id, &c)).await {
                    let answer = if yes {
                        send_pending(a, &chat, p).await
                    } else {
                        let (id, c, now) = (a.id.clone(), chat.clone(), a.now());
                        let _ = a
                            .ctx
                            .store
                            .call(move |t| db::finish_pending(t, &id, &c, None, now))
                            .await;
                        MailChat::NotSent
                    };
                    self.refresh_pending(accounts, &link.account, &chat).await;
                    return Answer::Said(answer);
                }
            }
            return Answer::Said(MailChat::NoReplyWaiting);
        }
        let lower = text.to_lowercase();
        if lower == "/digest" {
            let mut sent = false;
            for a in accounts {
                // The digest loop refreshes the counters and watches the delivery.
                a.wake.notify_one();
                match a.flush(true).await {
                    Ok(Flush::Sent) => sent = true,
                    Ok(Flush::CapReached) => return Answer::Said(MailChat::DigestCap),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(account = %a.id, error = %e, "cannot build a digest"),
                }
            }
            return if sent {
                Answer::Nothing
            } else {
                Answer::Said(MailChat::NothingNew)
            };
        }
        if lower.starts_with("/reply") {
            let answer = match parse_reply(text) {
                Some((n, body)) => match draft(accounts, &chat, n, body).await {
                    Ok(recipient) => Answer::Text(self.confirm.question(&recipient, body, lang)),
                    Err(said) => Answer::Said(said),
                },
                None => Answer::Said(MailChat::ReplyUsage),
            };
            self.refresh_pending(accounts, &link.account, &chat).await;
            return answer;
        }
        Answer::Said(MailChat::Help)
    }
}

impl MailChatHandler for MailChatRouter {
    fn wants(&self, account: &AccountKey, chat: &ChatId, text: &str) -> bool {
        if is_mail_command(text) {
            return !self.reporting_to_key(account).is_empty();
        }
        self.confirm.answer(text).is_some()
            && self
                .pending
                .lock()
                .is_ok_and(|p| p.contains(&(account.clone(), chat.as_str().to_string())))
    }

    fn handle<'a>(&'a self, link: &'a AccountLink, msg: Inbound) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let answer = self.answer(link, &msg).await;
            if answer.is_empty() {
                return;
            }
            let key = String::from(crate::ids::OutboxKey::mail_chat(&link.account, &msg.msg_id));
            let conv = self
                .reporting_to(link)
                .first()
                .map(|a| a.ctx.conversation.clone());
            if let Some(conv) = conv
                && let Err(e) = conv
                    .send_proactive(&link.account, &msg.chat, &answer, None, &key)
                    .await
            {
                tracing::warn!(account = %link.account, error = %e, "cannot queue a mail-chat answer");
            }
        })
    }
}

/// What the mail chat answers one message with.
enum Answer {
    /// One of the catalogue's answers.
    Said(MailChat),
    /// The confirmation's question, already in the chat's language.
    Text(String),
    /// Nothing (the digest itself is the answer).
    Nothing,
}

/// The language to answer in: a mail account's fixed `language` (as its digests use), else the
/// chat account's, else what the message shows (remembered for the chat, as the conversation
/// does; a `/reply`'s text counts), else the chat's remembered language, else English.
async fn chat_lang(accounts: &[Arc<Account>], link: &AccountLink, msg: &Inbound) -> Lang {
    let fixed = accounts.iter().find_map(|a| a.language.fixed());
    if let Some(lang) = fixed.or_else(|| link.language.fixed()) {
        return lang;
    }
    let seen = match parse_reply(&msg.text) {
        Some((_, body)) => words::detect(body),
        None => words::detect(&msg.text),
    };
    let Some(a) = accounts.first() else {
        return seen.unwrap_or_default();
    };
    let (account, chat) = (link.account.clone(), msg.chat.clone());
    let chosen = a
        .ctx
        .store
        .call(move |t| match seen {
            Some(lang) => words::remember(t, &account, &chat, lang).map(|()| Some(lang)),
            None => words::remembered(t, &account, &chat),
        })
        .await;
    match chosen {
        Ok(lang) => lang.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(account = %link.account, error = %e, "cannot read or keep a chat's language");
            seen.unwrap_or_default()
        }
    }
}

/// `/digest`, or `/reply` alone or followed by anything after a space or line break.
fn is_mail_command(text: &str) -> bool {
    let t = text.trim().to_lowercase();
    t == "/digest"
        || t.strip_prefix("/reply")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

/// `/reply 3 some text` → (3, "some text").
fn parse_reply(text: &str) -> Option<(u32, &str)> {
    let rest = text.get("/reply".len()..)?.trim_start();
    let (n, body) = rest.split_once(char::is_whitespace)?;
    let body = body.trim();
    (!body.is_empty()).then_some((n.parse().ok()?, body))
}

/// Finds item `n` of the newest digest in this chat, fetches the original and stores a draft;
/// returns who the reply goes to.
async fn draft(
    accounts: &[Arc<Account>],
    chat: &str,
    n: u32,
    body: &str,
) -> Result<String, MailChat> {
    let mut newest: Option<(i64, i64, &Arc<Account>)> = None;
    for a in accounts {
        let (id, to) = (
            a.id.clone(),
            a.report_to
                .as_ref()
                .map(|k| k.to_string())
                .unwrap_or_default(),
        );
        if let Ok(Some((digest, at))) = a
            .ctx
            .store
            .call(move |t| db::latest_digest(t, &id, &to))
            .await
            && newest.is_none_or(|(_, t, _)| at > t)
        {
            newest = Some((digest, at, a));
        }
    }
    let Some((digest, _, a)) = newest else {
        return Err(MailChat::NoDigestYet);
    };
    let Ok(Some((place, uid))) = a
        .ctx
        .store
        .call(move |t| db::digest_item(t, digest, n))
        .await
    else {
        return Err(MailChat::NoItem { n });
    };
    let Some(password) = password(a).await else {
        return Err(MailChat::NotLoggedIn);
    };
    if a.smtp_settings(password.clone()).is_none() {
        return Err(MailChat::RepliesOff);
    }
    let original = async {
        let mut imap = ImapSession::connect(&a.imap_settings(password)).await?;
        let state = imap.examine(&place.mailbox).await?;
        let items = if state.uid_validity.unwrap_or(0) == place.validity {
            imap.fetch_items(&[uid]).await?
        } else {
            Vec::new()
        };
        imap.logout().await;
        Ok::<_, scv_mail::MailError>(items.into_iter().next())
    }
    .await;
    let original = match original {
        Ok(Some(item)) => item,
        Ok(None) => return Err(MailChat::MailGone),
        Err(e) => {
            return Err(MailChat::FetchFailed {
                code: e.code().to_string(),
            });
        }
    };
    let from = MailAddress::new(None, &a.own_address().await);
    let built = reply_to(&original, from, body).and_then(|m| build_message(&m));
    let built = match built {
        Ok(b) => b,
        Err(e) => {
            return Err(MailChat::DraftFailed {
                code: e.code().to_string(),
            });
        }
    };
    let recipient = built.envelope_to.join(", ");
    let pending = PendingReply {
        message_id: built.message_id.clone(),
        raw: built.raw.clone(),
        envelope_from: built.envelope_from.clone(),
        envelope_to: built.envelope_to.join("\n"),
    };
    let (id, c, now) = (a.id.clone(), chat.to_string(), a.now());
    if a.ctx
        .store
        .call(move |t| db::put_pending(t, &id, &c, &pending, now))
        .await
        .is_err()
    {
        return Err(MailChat::DraftNotStored);
    }
    Ok(recipient)
}

async fn password(a: &Account) -> Option<scv_mail::Password> {
    a.login()
        .await
        .ok()?
        .get(super::PASSWORD_FIELD)
        .map(|p| scv_mail::Password::new(p.expose()))
}

/// Sends a confirmed reply over SMTP, saves it to Sent when the server has one, forgets it.
async fn send_pending(a: &Account, chat: &str, p: PendingReply) -> MailChat {
    let Some(password) = password(a).await else {
        return MailChat::NotLoggedIn;
    };
    let Some(smtp) = a.smtp_settings(password.clone()) else {
        return MailChat::RepliesOff;
    };
    let message = BuiltMessage {
        message_id: p.message_id.clone(),
        raw: p.raw.clone(),
        envelope_from: p.envelope_from.clone(),
        envelope_to: p.envelope_to.lines().map(str::to_string).collect(),
    };
    let sent = async { SmtpSender::new(&smtp).await?.send(&message).await }.await;
    let (id, c, now, mid) = (
        a.id.clone(),
        chat.to_string(),
        a.now(),
        p.message_id.clone(),
    );
    match sent {
        Ok(()) => {
            let _ = a
                .ctx
                .store
                .call(move |t| db::finish_pending(t, &id, &c, Some(&mid), now))
                .await;
            tracing::info!(account = %a.id, "reply sent");
            let saved = async {
                let mut imap = ImapSession::connect(&a.imap_settings(password)).await?;
                let folder = imap.append_to_sent(&message.raw).await?;
                imap.logout().await;
                Ok::<_, scv_mail::MailError>(folder)
            }
            .await;
            match saved {
                Ok(Some(_)) => MailChat::SentSaved,
                Ok(None) => MailChat::Sent,
                Err(e) => MailChat::SentNotSaved {
                    code: e.code().to_string(),
                },
            }
        }
        Err(e) if e.classify() == ErrorClass::Transient => MailChat::NotSentYet {
            code: e.code().to_string(),
        },
        Err(e) => {
            let _ = a
                .ctx
                .store
                .call(move |t| db::finish_pending(t, &id, &c, None, now))
                .await;
            MailChat::Refused {
                code: e.code().to_string(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_commands_parse() {
        assert_eq!(
            parse_reply("/reply 3 Thanks, done."),
            Some((3, "Thanks, done."))
        );
        assert_eq!(
            parse_reply("/reply 12\nLine one\nLine two"),
            Some((12, "Line one\nLine two"))
        );
        assert_eq!(parse_reply("/reply 3"), None);
        assert_eq!(parse_reply("/reply x hi"), None);
    }

    #[test]
    fn mail_commands_are_told_from_chat() {
        for t in [
            "/digest",
            " /Digest ",
            "/reply",
            "/reply 2 ok",
            "/reply 2\nok",
        ] {
            assert!(is_mail_command(t), "{t}");
        }
        for t in ["/digests", "/replying", "digest", "please /digest", "/new"] {
            assert!(!is_mail_command(t), "{t}");
        }
    }

    #[test]
    fn answers_parse() {
        let c = TextConfirmation;
        for y in ["yes", "Y", "是", "yes."] {
            assert_eq!(c.answer(y), Some(true), "{y}");
        }
        for n in ["no", "N", "否"] {
            assert_eq!(c.answer(n), Some(false), "{n}");
        }
        assert_eq!(c.answer("yes please send it"), None);
    }
}
