//! The confirm-questions service as the Feishu card-answer handler.
//!
//! Wiring (outside this module): give the Feishu component `Some(Arc::new(ConfirmCards(svc)))`
//! through [`super::build_with`], e.g. from a field of the adapter context.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use scv_feishu::card::Answer;

use super::cards::{CardAnswerHandler, CardClick, ClickOutcome};
use crate::confirm::{AnswerOutcome, ConfirmService};

/// Hands the owner's yes/no clicks to the confirm service and shows its card afterwards.
pub struct ConfirmCards(pub Arc<ConfirmService>);

impl CardAnswerHandler for ConfirmCards {
    fn answer(&self, click: CardClick) -> BoxFuture<'static, ClickOutcome> {
        let svc = self.0.clone();
        Box::pin(async move {
            let id = click.question_id.clone();
            // The adapter checked the clicker against this account's owner; a question asked
            // on another account is not theirs to answer from here.
            let ours = svc
                .view(&id)
                .is_some_and(|v| v.account.as_ref() == Some(&click.account));
            if !ours {
                return ClickOutcome::NotOpen { card: None };
            }
            let yes = click.answer == Answer::Yes;
            match svc.answer(&id, yes, click.operator.as_str()).await {
                Ok(AnswerOutcome::Recorded(_)) => match card_of(&svc, &id) {
                    Some(card) => ClickOutcome::Recorded { card },
                    None => ClickOutcome::NotOpen { card: None },
                },
                Ok(AnswerOutcome::AlreadyClosed(_)) => ClickOutcome::NotOpen {
                    card: card_of(&svc, &id),
                },
                Err(e) => {
                    tracing::warn!(account = %click.account, error = %e, "cannot record a card answer");
                    ClickOutcome::NotOpen { card: None }
                }
            }
        })
    }
}

/// The card question `id` shows now, rendered from the service's body of it.
fn card_of(svc: &ConfirmService, id: &str) -> Option<serde_json::Value> {
    super::render::card(&svc.body(id)?).ok().flatten()
}
