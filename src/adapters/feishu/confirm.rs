//! The port's button answers (the confirm questions) as the Feishu card-answer handler: a click
//! becomes a platform-neutral press, and the question's body comes back rendered as a card.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use scv_feishu::card::Answer;

use super::cards::{CardAnswerHandler, CardClick, ClickOutcome};
use crate::conversation::{ButtonAnswers, ButtonPress, PressOutcome};

/// Hands the owner's yes/no clicks to the button answerer and shows its card afterwards.
pub struct ConfirmCards(pub Arc<dyn ButtonAnswers>);

impl CardAnswerHandler for ConfirmCards {
    fn answer(&self, click: CardClick) -> BoxFuture<'static, ClickOutcome> {
        let answers = self.0.clone();
        Box::pin(async move {
            let press = ButtonPress {
                account: click.account,
                question_id: click.question_id,
                yes: click.answer == Answer::Yes,
                operator: click.operator,
            };
            match answers.press(press).await {
                PressOutcome::Recorded(body) => match super::render::card(&body).ok().flatten() {
                    Some(card) => ClickOutcome::Recorded { card },
                    None => ClickOutcome::NotOpen { card: None },
                },
                PressOutcome::NotOpen(body) => ClickOutcome::NotOpen {
                    card: body.and_then(|b| super::render::card(&b).ok().flatten()),
                },
            }
        })
    }
}
