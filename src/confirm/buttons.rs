//! The confirm service as the answerer of question buttons, for any platform that has them.

use futures_util::future::BoxFuture;

use super::{AnswerOutcome, ConfirmService};
use crate::conversation::{ButtonAnswers, ButtonPress, PressOutcome};

impl ButtonAnswers for ConfirmService {
    fn press(&self, press: ButtonPress) -> BoxFuture<'_, PressOutcome> {
        Box::pin(answer(self, press))
    }
}

async fn answer(svc: &ConfirmService, press: ButtonPress) -> PressOutcome {
    let id = press.question_id.clone();
    // The adapter checked the presser against this account's owner; a question asked on
    // another account is not theirs to answer from here.
    let ours = svc
        .view(&id)
        .is_some_and(|v| v.account.as_ref() == Some(&press.account));
    if !ours {
        return PressOutcome::NotOpen(None);
    }
    match svc.answer(&id, press.yes, press.operator.as_str()).await {
        Ok(AnswerOutcome::Recorded(_)) => match svc.body(&id) {
            Some(body) => PressOutcome::Recorded(body),
            None => PressOutcome::NotOpen(None),
        },
        Ok(AnswerOutcome::AlreadyClosed(_)) => PressOutcome::NotOpen(svc.body(&id)),
        Err(e) => {
            tracing::warn!(account = %press.account, error = %e, "cannot record a button answer");
            PressOutcome::NotOpen(None)
        }
    }
}
