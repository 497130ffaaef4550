//! Card clicks: yes/no buttons answered by the owner, within the platform's 3 s.
//!
//! A click arrives as `card.action.trigger`; its answer (a toast and maybe a replacement card)
//! travels back in the ACK. This module checks that the clicker is the owner (a stranger gets an
//! error toast and nothing changes), dedupes repeated clicks and re-pushes (they get the first
//! answer again), and hands `(question id, yes/no, operator)` to a [`CardAnswerHandler`], the
//! hook the confirm-questions feature implements. Without a handler every question is "no longer
//! open".

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_feishu::card::{Answer, CardResponse, ToastKind};
use scv_feishu::event::CardAction;
use serde_json::Value;

use crate::config::AccountKey;
use crate::conversation::SenderId;

/// The handler must answer within this, leaving time for the ACK inside Feishu's 3 s.
pub const HANDLER_DEADLINE: Duration = Duration::from_millis(2000);

/// Toast for a click by anyone but the owner.
pub const NOT_OWNER: &str = "Only the owner of this bot can answer this question.";
/// Toast for a question nobody is waiting for.
pub const NOT_OPEN: &str = "This question is no longer open.";
/// Toast for a recorded answer.
pub const RECORDED: &str = "Answer recorded.";
/// Toast when the handler was too slow (not cached, so a second click tries again).
pub const TOO_SLOW: &str = "Could not record the answer in time; please try again.";

/// Answers remembered for repeated clicks.
const CACHE: usize = 512;

/// One owner click on a yes/no button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardClick {
    /// The account whose card was clicked.
    pub account: AccountKey,
    /// The question id carried by the button.
    pub question_id: String,
    /// Yes or no.
    pub answer: Answer,
    /// Who clicked (always the owner by the time a handler sees it).
    pub operator: SenderId,
    /// The card message (`om_…`), when the platform says.
    pub message_id: Option<String>,
}

/// What the handler did with a click.
#[derive(Debug, Clone, PartialEq)]
pub enum ClickOutcome {
    /// The answer is recorded; `card` replaces the clicked one (e.g. `YesNoCard::resolved`).
    Recorded {
        /// The replacement card (buttons removed, "Approved by you at 14:03").
        card: Value,
    },
    /// The question is answered, expired or withdrawn; `card` optionally shows how it ended.
    NotOpen {
        /// A replacement card, if the handler has one.
        card: Option<Value>,
    },
}

/// Receives the owner's card answers; the confirm-questions feature implements it.
///
/// Called at most once per distinct click (repeats get the first answer), after the owner check.
/// It must answer within [`HANDLER_DEADLINE`]: store the answer and return; no slow work.
pub trait CardAnswerHandler: Send + Sync + 'static {
    /// Records one answer and says how the card should look now.
    fn answer(&self, click: CardClick) -> BoxFuture<'static, ClickOutcome>;
}

/// Remembers the answers given to recent clicks, keyed by callback token and by
/// (message, operator, value), so a re-push or a double click changes nothing twice.
#[derive(Default)]
pub struct ClickCache {
    inner: Mutex<(HashMap<String, CardResponse>, VecDeque<String>)>,
}

impl ClickCache {
    fn keys(click: &CardAction) -> Vec<String> {
        let mut keys = Vec::with_capacity(2);
        if let Some(t) = &click.token {
            keys.push(format!("t:{t}"));
        }
        keys.push(format!(
            "v:{}|{}|{}",
            click.open_message_id.as_deref().unwrap_or_default(),
            click.operator_open_id,
            click.value
        ));
        keys
    }

    fn get(&self, click: &CardAction) -> Option<CardResponse> {
        let map = self.inner.lock().ok()?;
        Self::keys(click).iter().find_map(|k| map.0.get(k).cloned())
    }

    fn put(&self, click: &CardAction, response: &CardResponse) {
        let Ok(mut guard) = self.inner.lock() else {
            return;
        };
        let (map, order) = &mut *guard;
        for k in Self::keys(click) {
            if map.insert(k.clone(), response.clone()).is_none() {
                order.push_back(k);
            }
        }
        while order.len() > CACHE {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
    }
}

/// Decides the response to one click; see the module doc for the rules.
pub async fn respond(
    account: &AccountKey,
    owner: Option<&str>,
    handler: Option<&dyn CardAnswerHandler>,
    cache: &ClickCache,
    click: &CardAction,
) -> CardResponse {
    let Some((question, answer)) = click.yes_no() else {
        // Not one of our buttons: accept it and change nothing.
        return CardResponse::empty();
    };
    if owner.is_none_or(|o| o != click.operator_open_id) {
        return CardResponse::toast(ToastKind::Error, NOT_OWNER);
    }
    if let Some(previous) = cache.get(click) {
        return previous;
    }
    let Some(handler) = handler else {
        return CardResponse::toast(ToastKind::Info, NOT_OPEN);
    };
    let call = handler.answer(CardClick {
        account: account.clone(),
        question_id: question.to_string(),
        answer,
        operator: SenderId::new(&click.operator_open_id),
        message_id: click.open_message_id.clone(),
    });
    let response = match tokio::time::timeout(HANDLER_DEADLINE, call).await {
        Ok(ClickOutcome::Recorded { card }) => {
            CardResponse::toast(ToastKind::Success, RECORDED).with_card(card)
        }
        Ok(ClickOutcome::NotOpen { card }) => {
            let r = CardResponse::toast(ToastKind::Info, NOT_OPEN);
            match card {
                Some(c) => r.with_card(c),
                None => r,
            }
        }
        Err(_) => {
            tracing::warn!(account = %account, "card answer handler missed its deadline");
            return CardResponse::toast(ToastKind::Warning, TOO_SLOW);
        }
    };
    cache.put(click, &response);
    response
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::config::Channel;
    use serde_json::json;

    struct Counting(Arc<AtomicUsize>);

    impl CardAnswerHandler for Counting {
        fn answer(&self, click: CardClick) -> BoxFuture<'static, ClickOutcome> {
            let n = self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                if n == 0 {
                    ClickOutcome::Recorded {
                        card: json!({"answered": click.answer.as_str()}),
                    }
                } else {
                    ClickOutcome::NotOpen { card: None }
                }
            })
        }
    }

    fn click(op: &str, token: &str, a: &str) -> CardAction {
        CardAction {
            operator_open_id: op.into(),
            token: Some(token.into()),
            tag: Some("button".into()),
            value: json!({"q": "q1", "a": a}),
            open_message_id: Some("om_card".into()),
            open_chat_id: Some("oc_1".into()),
        }
    }

    fn key() -> AccountKey {
        AccountKey::new(Channel::Feishu, "w")
    }

    #[tokio::test]
    async fn owner_answers_once_stranger_changes_nothing() {
        let calls = Arc::new(AtomicUsize::new(0));
        let h = Counting(calls.clone());
        let cache = ClickCache::default();
        let stranger = respond(
            &key(),
            Some("ou_o"),
            Some(&h),
            &cache,
            &click("ou_x", "c-1", "yes"),
        )
        .await;
        assert_eq!(stranger, CardResponse::toast(ToastKind::Error, NOT_OWNER));
        assert_eq!(calls.load(Ordering::SeqCst), 0);

        let first = respond(
            &key(),
            Some("ou_o"),
            Some(&h),
            &cache,
            &click("ou_o", "c-2", "yes"),
        )
        .await;
        assert_eq!(first.card, Some(json!({"answered": "yes"})));
        // The re-push (same token) and a double click (new token, same value) repeat the answer.
        let again = respond(
            &key(),
            Some("ou_o"),
            Some(&h),
            &cache,
            &click("ou_o", "c-2", "yes"),
        )
        .await;
        let double = respond(
            &key(),
            Some("ou_o"),
            Some(&h),
            &cache,
            &click("ou_o", "c-3", "yes"),
        )
        .await;
        assert_eq!((again == first, double == first), (true, true));
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn without_owner_or_handler() {
        let cache = ClickCache::default();
        let r = respond(&key(), None, None, &cache, &click("ou_o", "c-1", "yes")).await;
        assert_eq!(r.toast, Some((ToastKind::Error, NOT_OWNER.to_string())));
        let r = respond(
            &key(),
            Some("ou_o"),
            None,
            &cache,
            &click("ou_o", "c-1", "yes"),
        )
        .await;
        assert_eq!(r, CardResponse::toast(ToastKind::Info, NOT_OPEN));
        let mut other = click("ou_o", "c-2", "yes");
        other.value = json!({"something": "else"});
        assert_eq!(
            respond(&key(), Some("ou_o"), None, &cache, &other).await,
            CardResponse::empty()
        );
    }

    struct Stuck;

    impl CardAnswerHandler for Stuck {
        fn answer(&self, _click: CardClick) -> BoxFuture<'static, ClickOutcome> {
            Box::pin(std::future::pending())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_handler_still_gets_an_answer_in_time() {
        let cache = ClickCache::default();
        let started = tokio::time::Instant::now();
        let r = respond(
            &key(),
            Some("ou_o"),
            Some(&Stuck),
            &cache,
            &click("ou_o", "c-1", "no"),
        )
        .await;
        assert_eq!(r, CardResponse::toast(ToastKind::Warning, TOO_SLOW));
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            cache.get(&click("ou_o", "c-1", "no")).is_none(),
            "not cached"
        );
    }
}
