//! The fast lane: built-in commands, confirm answers and mail-chat messages, handled at once.

use std::sync::Arc;

use super::journal::{self, FastRoute};
use super::message::Inbound;
use super::{AccountRuntime, AnswerClaim, Conversation};
use crate::agent::SessionKey;
use crate::policy::Decision;
use crate::protocol::ComponentState;
use crate::words::Msg;

/// A built-in command; owner only, never sent to the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Start a fresh conversation.
    New,
    /// Cancel the running turn.
    Stop,
    /// This bridge's health in two lines.
    Status,
    /// What the commands do.
    Help,
    /// `/voice [on|off|auto]` (`voice_mode`).
    Voice(super::voice_mode::VoiceArg),
}

/// The command `text` is, if it is exactly one (`/new`, `/stop`, `/status`, `/help`).
pub fn parse(text: &str) -> Option<Command> {
    if let Some(arg) = super::voice_mode::parse(text) {
        return Some(Command::Voice(arg));
    }
    match text.trim().to_ascii_lowercase().as_str() {
        "/new" => Some(Command::New),
        "/stop" => Some(Command::Stop),
        "/status" => Some(Command::Status),
        "/help" => Some(Command::Help),
        _ => None,
    }
}

/// How long an owner's mail-chat message waits for the mail accounts to start (they install
/// the handler) before it is given up with a warning.
pub(crate) const MAIL_ACCOUNTS_START: std::time::Duration = std::time::Duration::from_secs(30);

/// Handles a fast-lane message by the route stored when it was journaled, then marks it done.
/// A row journaled before routes were stored (`route` is `None`) is decided now, as then.
pub(super) async fn handle_fast(
    conv: Arc<Conversation>,
    rt: Arc<AccountRuntime>,
    m: Inbound,
    route: Option<FastRoute>,
) {
    // Exactly one handler per message: the route that journaled it and the resume after an
    // attach may both try; the claim decides.
    let (a, id, run) = (m.account.clone(), m.msg_id.clone(), rt.run.clone());
    match conv
        .store
        .call(move |t| journal::claim_fast(t, &a, &id, &run))
        .await
    {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            tracing::error!(account = %m.account, error = %e, "cannot claim a message");
            return;
        }
    }
    let (decision, from_owner) = rt.link.decide(&m.sender);
    let route = route.or_else(|| legacy_route(&conv, &m, decision, from_owner));
    let route = super::which::settle(&conv, &m, from_owner, route);
    let command = parse(&m.text).filter(|_| from_owner);
    let answers = conv.answers();
    match (route, answers, command) {
        (Some(FastRoute::Which), _, _) => super::which::ask(&conv, &rt, &m).await,
        (Some(FastRoute::MailChat), _, _) => mail_chat(&conv, &rt, &m).await,
        // Claimed as an answer when journaled: the interceptor says how it stands now (recorded,
        // already closed, no open question), even if the question closed meanwhile.
        (Some(FastRoute::Answer), Some(a), _) => a.handle(&rt.link, m.clone()).await,
        (Some(FastRoute::Command), _, Some(cmd)) => {
            let lang = super::lang::of_chat(&conv, &rt, &m).await;
            let answer = run_command(&conv, &rt, &m, cmd).await.text(lang);
            if let Err(e) = conv.reply_text(&rt, &m, "cmd", &answer).await {
                tracing::error!(account = %m.account, error = %e, "cannot queue a command's answer");
                return;
            }
        }
        _ => {
            if let Decision::Drop(reason) = decision {
                // The policy changed since it was journaled (reattached with other settings).
                conv.count_drop(&m.account, reason.as_str());
            } else {
                to_the_agent(&conv, &rt, &m).await;
                return;
            }
        }
    }
    let (a, id) = (m.account.clone(), m.msg_id.clone());
    if let Err(e) = conv.store.call(move |t| journal::finish(t, &a, &id)).await {
        tracing::error!(account = %m.account, error = %e, "cannot mark a message done");
    }
}

/// The route of a row journaled by a release that did not store routes: decided now, as then.
fn legacy_route(
    conv: &Conversation,
    m: &Inbound,
    decision: Decision,
    from_owner: bool,
) -> Option<FastRoute> {
    let claimed = conv
        .answers()
        .is_some_and(|a| a.claim(&m.account, &m.chat, from_owner, &m.text) != AnswerClaim::None);
    if decision == Decision::MailChat {
        Some(FastRoute::MailChat)
    } else if claimed {
        Some(FastRoute::Answer)
    } else if parse(&m.text).is_some() && from_owner {
        Some(FastRoute::Command)
    } else {
        None
    }
}

/// The owner's message for the mail accounts reporting to this chat; when none is there to
/// take it, the owner is told so (counted `mail_chat_unhandled`).
async fn mail_chat(conv: &Arc<Conversation>, rt: &Arc<AccountRuntime>, m: &Inbound) {
    if let Some(h) = conv.mail_chat_handler(MAIL_ACCOUNTS_START).await {
        return h.handle(&rt.link, m.clone()).await;
    }
    tracing::warn!(account = %rt.link.account, "a mail chat message arrived but no mail account reports here");
    conv.count_drop(&m.account, "mail_chat_unhandled");
    let lang = super::lang::of_chat(conv, rt, m).await;
    let text = Msg::MailChatNotReady.text(lang);
    if let Err(e) = conv.reply_text(rt, m, "mail", &text).await {
        tracing::error!(account = %m.account, error = %e, "cannot queue the note that the mail chat is not ready");
    }
}

/// A message journaled as fast that is no longer (its question closed meanwhile, a route an
/// older release did not store, or a command whose sender is no longer the owner): the agent
/// has it, as any message.
async fn to_the_agent(conv: &Arc<Conversation>, rt: &Arc<AccountRuntime>, m: &Inbound) {
    let (a, id) = (m.account.clone(), m.msg_id.clone());
    let moved = conv
        .store
        .call(move |t| {
            t.execute(
                "UPDATE inbound_journal SET state = 'new' WHERE account = ?1 AND msg_id = ?2",
                [a.to_string(), id.0],
            )
        })
        .await;
    if moved.is_ok() {
        conv.chat(rt, &m.chat).wake_turn();
    }
}

/// What `/stop` cancels in `m`'s chat: its running turn, or the wait of a message kept for a
/// retry (see `turns::run`).
fn running(rt: &AccountRuntime, m: &Inbound) -> Option<tokio_util::sync::CancellationToken> {
    rt.chats
        .lock()
        .ok()
        .and_then(|c| c.get(&m.chat).cloned())
        .and_then(|c| c.current_turn.lock().ok().and_then(|t| t.clone()))
}

async fn run_command(conv: &Conversation, rt: &AccountRuntime, m: &Inbound, cmd: Command) -> Msg {
    match cmd {
        Command::Help => Msg::Help,
        Command::Voice(arg) => super::voice_mode::run(conv, rt, m, arg).await,
        // The running turn, or a message kept for a retry while the agent is down: released.
        Command::Stop => match running(rt, m) {
            Some(t) => {
                t.cancel();
                Msg::Stopped
            }
            None => Msg::NothingRunning,
        },
        Command::New => {
            // A fresh start does not wait behind the old conversation's turn (a hung or dying
            // agent's would hold the chat for good).
            if let Some(t) = running(rt, m) {
                t.cancel();
            }
            let session = SessionKey {
                account: m.account.clone(),
                chat: m.chat.clone(),
            };
            match conv.backends.current().agent.reset(&session).await {
                Ok(()) => Msg::FreshConversation,
                Err(e) => Msg::FreshFailed {
                    error: e.to_string(),
                },
            }
        }
        Command::Status => {
            let h = rt.link.health.get();
            let error = h
                .error
                .clone()
                .filter(|_| h.state != ComponentState::Connected);
            Msg::Status {
                id: h.id.to_string(),
                state: h.state,
                error,
                bridge: conv.status_line(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_commands_parse() {
        assert_eq!(parse("/new"), Some(Command::New));
        assert_eq!(parse(" /STOP \n"), Some(Command::Stop));
        assert_eq!(parse("/status"), Some(Command::Status));
        assert_eq!(parse("/help"), Some(Command::Help));
        assert_eq!(parse("/new please"), None);
        assert_eq!(parse("what is /new"), None);
        assert_eq!(parse("/reboot"), None);
    }
}
