//! The "thinking" sign on DingTalk (spec §4.8, optional): the reaction
//! [`scv_dingtalk::emotion::THINKING`] on the owner's message while the agent works, recalled
//! when the answer is done.
//!
//! Best-effort by design: the body is observed, not documented, so a refused put is not tried
//! again for that message (the pipeline refreshes typing every few seconds; a refusal would
//! otherwise repeat as a failure loop), a failed recall is only logged, and neither ever holds
//! up the answer. One put and one recall per answer, however long it takes, since every API call
//! may count against the app's monthly quota (spec §4.9); `thinking_reaction = false` turns it
//! off.

use std::collections::HashMap;
use std::sync::Mutex;

use scv_dingtalk::Client;
use scv_dingtalk::emotion::THINKING;

/// What the sign is for each message being answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sign {
    Shown,
    /// The put failed: not tried again for this message.
    Refused,
}

/// The thinking reactions of one account. Made by the sender; one per run.
#[derive(Default)]
pub(super) struct Typing {
    signs: Mutex<HashMap<String, Sign>>,
}

impl Typing {
    /// Shows (`on`) or recalls the sign on message `msg_id` of conversation `conversation`.
    pub async fn set(&self, client: &Client, msg_id: &str, conversation: &str, on: bool) {
        if on {
            if self.get(msg_id).is_some() {
                return; // shown already, or refused: one put per message
            }
            let sign = match client.react(msg_id, conversation, THINKING).await {
                Ok(()) => Sign::Shown,
                Err(e) => {
                    tracing::debug!(error = %e, "cannot show the thinking reaction");
                    Sign::Refused
                }
            };
            self.put(msg_id, Some(sign));
        } else if self.put(msg_id, None) == Some(Sign::Shown)
            && let Err(e) = client.unreact(msg_id, conversation, THINKING).await
        {
            tracing::debug!(error = %e, "cannot recall the thinking reaction");
        }
    }

    fn get(&self, msg_id: &str) -> Option<Sign> {
        self.lock().get(msg_id).copied()
    }

    /// Sets (or with `None` forgets) the sign of `msg_id`; returns what it was.
    fn put(&self, msg_id: &str, sign: Option<Sign>) -> Option<Sign> {
        let mut signs = self.lock();
        match sign {
            Some(s) => signs.insert(msg_id.to_string(), s),
            None => signs.remove(msg_id),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Sign>> {
        self.signs.lock().unwrap_or_else(|p| p.into_inner())
    }
}
