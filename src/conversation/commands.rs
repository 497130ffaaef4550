//! The fast lane: built-in commands, confirm answers and mail-chat messages, handled at once.

use std::sync::Arc;

use super::journal;
use super::message::Inbound;
use super::{AccountRuntime, Conversation};
use crate::agent::SessionKey;
use crate::policy::Decision;
use crate::protocol::ComponentState;

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
}

/// The command `text` is, if it is exactly one (`/new`, `/stop`, `/status`, `/help`).
pub fn parse(text: &str) -> Option<Command> {
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

const HELP: &str = "Commands: /new starts a fresh conversation, /stop cancels the running answer, \
/status shows the bridge's health, /help shows this.";

/// Handles a fast-lane message, then marks it done.
pub(super) async fn handle_fast(conv: Arc<Conversation>, rt: Arc<AccountRuntime>, m: Inbound) {
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
    let l = &rt.link;
    let (decision, from_owner) = l.decide(&m.sender);
    let answers = conv.answers();
    if decision == Decision::MailChat {
        match conv.mail_chat_handler(MAIL_ACCOUNTS_START).await {
            Some(h) => h.handle(l, m.clone()).await,
            None => {
                tracing::warn!(account = %l.account, "a mail chat message arrived but no mail account reports here")
            }
        }
    } else if let Some(a) = answers.filter(|a| a.wants(&m.account, &m.chat, from_owner, &m.text)) {
        a.handle(l, m.clone()).await;
    } else if let (Some(cmd), true) = (parse(&m.text), from_owner) {
        let answer = run_command(&conv, &rt, &m, cmd).await;
        if let Err(e) = conv.reply_text(&rt, &m, "cmd", &answer).await {
            tracing::error!(account = %m.account, error = %e, "cannot queue a command's answer");
            return;
        }
    } else if matches!(decision, Decision::Drop(_)) {
        // The policy changed since it was journaled (reattached with other settings): drop it.
    } else {
        // It was journaled as fast but no longer is (the question was answered meanwhile): let the agent have it.
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
            conv.chat(&rt, &m.chat).wake_turn();
        }
        return;
    }
    let (a, id) = (m.account.clone(), m.msg_id.clone());
    if let Err(e) = conv.store.call(move |t| journal::finish(t, &a, &id)).await {
        tracing::error!(account = %m.account, error = %e, "cannot mark a message done");
    }
}

async fn run_command(
    conv: &Conversation,
    rt: &AccountRuntime,
    m: &Inbound,
    cmd: Command,
) -> String {
    match cmd {
        Command::Help => HELP.to_string(),
        Command::Stop => {
            let token = rt
                .chats
                .lock()
                .ok()
                .and_then(|c| c.get(&m.chat).cloned())
                .and_then(|c| c.current_turn.lock().ok().and_then(|t| t.clone()));
            match token {
                Some(t) => {
                    t.cancel();
                    "Stopped.".to_string()
                }
                None => "Nothing is running.".to_string(),
            }
        }
        Command::New => {
            let session = SessionKey {
                account: m.account.clone(),
                chat: m.chat.clone(),
            };
            match conv.agent.reset(&session).await {
                Ok(()) => "Started a fresh conversation.".to_string(),
                Err(e) => format!("Could not start a fresh conversation: {e}"),
            }
        }
        Command::Status => {
            let h = rt.link.health.get();
            let mut first = format!("{}: {}", h.id, h.state.as_str());
            if h.state != ComponentState::Connected
                && let Some(e) = &h.error
            {
                first.push_str(&format!(" ({e})"));
            }
            let second = conv.status_line();
            format!("{first}\n{second}")
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
