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
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// `/agent`: the agents this chat may use; `/agent NAME`: this chat talks to NAME.
    Agent(Option<String>),
}

/// The command `text` is, if it is exactly one (`/new`, `/stop`, `/status`, `/help`,
/// `/agent`, `/agent NAME`).
pub fn parse(text: &str) -> Option<Command> {
    if let Some(arg) = super::voice_mode::parse(text) {
        return Some(Command::Voice(arg));
    }
    let text = text.trim();
    match text.to_ascii_lowercase().as_str() {
        "/new" => return Some(Command::New),
        "/stop" => return Some(Command::Stop),
        "/status" => return Some(Command::Status),
        "/help" => return Some(Command::Help),
        "/agent" => return Some(Command::Agent(None)),
        _ => {}
    }
    // One word after `/agent`: an agent's name (names are letters, digits, '-' and '_').
    let (head, name) = text.split_once(char::is_whitespace)?;
    let name = name.trim();
    let one_name = crate::ids::valid_account_name(name);
    (head.eq_ignore_ascii_case("/agent") && one_name).then(|| Command::Agent(Some(name.into())))
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
            let answer = match cmd {
                Command::Agent(name) => {
                    let said = super::choice::command(&conv, &rt, &m, name.as_deref()).await;
                    said.text(lang)
                }
                Command::Stop => stop(&conv, &rt, &m, lang).await.into(),
                Command::Status => {
                    let status = run_command(&conv, &rt, &m, cmd).await.text(lang);
                    // With agents to choose from, the one this chat talks to.
                    match conv.backends.names().len() > 1 {
                        true => {
                            let name = super::choice::now_answering(&conv, &rt, &m).await;
                            let agent = crate::words::AgentWords::Now { name }.text(lang);
                            format!("{status}\n{agent}").into()
                        }
                        false => status,
                    }
                }
                cmd => run_command(&conv, &rt, &m, cmd).await.text(lang),
            };
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
/// retry (see `turns::run`), with the messages that turn answers.
fn running_turn(
    rt: &AccountRuntime,
    m: &Inbound,
) -> (
    Option<tokio_util::sync::CancellationToken>,
    Vec<crate::ids::PlatformMsgId>,
) {
    let chat = rt.chats.lock().ok().and_then(|c| c.get(&m.chat).cloned());
    chat.map(|c| c.running()).unwrap_or_default()
}

/// What `/stop` cancels in `m`'s chat: its running turn, or a wait (see [`running_turn`]).
fn running(rt: &AccountRuntime, m: &Inbound) -> Option<tokio_util::sync::CancellationToken> {
    running_turn(rt, m).0
}

/// `/stop`: the messages waiting behind the running turn (sent before the `/stop`) are dropped
/// first, so the turn worker cannot start on them, then the running turn is cancelled at once.
/// The owner said stop: a burst that waited is not answered either.
async fn stop(
    conv: &Arc<Conversation>,
    rt: &AccountRuntime,
    m: &Inbound,
    lang: crate::words::Lang,
) -> String {
    let (token, ids) = running_turn(rt, m);
    let (a, c, id) = (m.account.clone(), m.chat.clone(), m.msg_id.clone());
    let dropped = conv
        .store
        .call(move |t| journal::drop_waiting(t, &a, &c, &id, &ids))
        .await
        .unwrap_or_else(|e| {
            tracing::error!(account = %m.account, error = %e, "cannot drop the messages waiting behind /stop");
            0
        });
    for _ in 0..dropped {
        conv.stats.dropped(&m.account, "stopped_by_owner");
    }
    let said = match &token {
        Some(t) => {
            t.cancel();
            Msg::Stopped
        }
        None if dropped > 0 => Msg::Stopped,
        None => Msg::NothingRunning,
    };
    let text = said.text(lang).into_owned();
    match dropped {
        0 => text,
        n => format!(
            "{text} {}",
            crate::words::AgentWords::DroppedWaiting { count: n }.text(lang)
        ),
    }
}

async fn run_command(conv: &Conversation, rt: &AccountRuntime, m: &Inbound, cmd: Command) -> Msg {
    match cmd {
        Command::Help | Command::Agent(_) => Msg::Help,
        Command::Voice(arg) => super::voice_mode::run(conv, rt, m, arg).await,
        // The running turn, or a message kept for a retry while the agent is down: released
        // (the fast lane calls `stop`, which drops what waits behind it first).
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
            let chosen = super::choice::chosen(conv, m).await;
            let (_, backend) = super::choice::answering(conv, rt, m, chosen.as_deref());
            match backend.agent.reset(&session).await {
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
        assert_eq!(parse("/agent"), Some(Command::Agent(None)));
        assert_eq!(
            parse(" /Agent claude "),
            Some(Command::Agent(Some("claude".into())))
        );
        assert_eq!(parse("/agent two words"), None);
        assert_eq!(parse("/agents claude"), None);
    }
}
