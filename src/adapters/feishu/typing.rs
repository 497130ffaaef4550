//! The typing sign on Feishu: a `Typing` reaction on the owner's message while the agent
//! works, removed when the answer is done (media-and-streaming.md §5.3).
//!
//! Best-effort by design: a failed add is not retried within the turn (the pipeline refreshes
//! typing every few seconds; a refused add would otherwise repeat as a failure loop), a failed
//! remove is only logged, and neither ever holds up the answer.

use std::collections::HashMap;
use std::sync::Mutex;

use scv_feishu::Client;
use scv_feishu::reaction::TYPING;

/// What the sign is for each message being answered.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sign {
    /// Shown: the reaction's id, which removing it needs.
    Shown(String),
    /// The add failed: not tried again for this message.
    Refused,
}

/// The typing reactions of one account.
#[derive(Default)]
pub struct Typing {
    signs: Mutex<HashMap<String, Sign>>,
}

impl Typing {
    /// Shows (`on`) or removes the sign on `message_id`.
    pub async fn set(&self, client: &Client, message_id: &str, on: bool) {
        if on {
            if self.get(message_id).is_some() {
                return; // shown already, or refused: one add per message
            }
            let sign = match client.add_reaction(message_id, TYPING).await {
                Ok(id) => Sign::Shown(id),
                Err(e) => {
                    tracing::debug!(error = %e, "cannot show the typing reaction");
                    Sign::Refused
                }
            };
            self.put(message_id, Some(sign));
        } else if let Some(Sign::Shown(id)) = self.put(message_id, None)
            && let Err(e) = client.remove_reaction(message_id, &id).await
        {
            tracing::debug!(error = %e, "cannot remove the typing reaction");
        }
    }

    fn get(&self, message_id: &str) -> Option<Sign> {
        self.lock().get(message_id).cloned()
    }

    /// Sets (or with `None` forgets) the sign of `message_id`; returns what it was.
    fn put(&self, message_id: &str, sign: Option<Sign>) -> Option<Sign> {
        let mut signs = self.lock();
        match sign {
            Some(s) => signs.insert(message_id.to_string(), s),
            None => signs.remove(message_id),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Sign>> {
        self.signs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scv_feishu::fake::{FakeConfig, FakeFeishu};
    use scv_feishu::{ClientOptions, Credentials, Domain};

    async fn client(fake: &FakeFeishu, cfg: &FakeConfig) -> Client {
        let creds = Credentials::new(cfg.app_id.clone(), cfg.app_secret.clone());
        Client::new(ClientOptions::new(
            Domain::Custom(fake.base_url().to_string()),
            creds,
        ))
        .expect("client")
    }

    #[tokio::test]
    async fn one_add_per_answer_however_often_typing_is_refreshed() {
        let cfg = FakeConfig::fast();
        let fake = FakeFeishu::start(cfg.clone()).await.expect("fake");
        let c = client(&fake, &cfg).await;
        let t = Typing::default();
        for _ in 0..3 {
            t.set(&c, "om_1", true).await;
        }
        assert_eq!(fake.reaction_requests(), 1);
        t.set(&c, "om_1", false).await;
        let r = fake.reactions();
        assert_eq!((r.len(), r[0].removed), (1, true));
        t.set(&c, "om_1", false).await;
        assert_eq!(fake.reaction_requests(), 2, "nothing left to remove");
    }

    #[tokio::test]
    async fn a_refused_add_is_not_retried_within_the_answer() {
        let cfg = FakeConfig::fast();
        let fake = FakeFeishu::start(cfg.clone()).await.expect("fake");
        let c = client(&fake, &cfg).await;
        fake.refuse_reactions(231003, usize::MAX);
        let t = Typing::default();
        for _ in 0..5 {
            t.set(&c, "om_gone", true).await;
        }
        t.set(&c, "om_gone", false).await;
        assert_eq!(fake.reaction_requests(), 1, "no failure loop");
        // The next answer tries again.
        t.set(&c, "om_gone", true).await;
        assert_eq!(fake.reaction_requests(), 2);
    }
}
