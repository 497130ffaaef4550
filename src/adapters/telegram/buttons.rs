//! A press of a question's Yes/No button (spec §4.4): answered at once (the client shows a
//! spinner until then, and the deadline is unconfirmed), counted only from the owner, handed
//! to the port's answers, and the message then edited to say how the question reads, without
//! the keyboard, so a second press has nothing to press.

use std::sync::Arc;

use scv_telegram::{CallbackQuery, Client};

use crate::conversation::{Body, ButtonAnswers, ButtonPress, PressOutcome};
use crate::ids::{AccountKey, SenderId};

/// What a button's `callback_data` says: (question id, yes).
pub(super) fn parse(data: &str) -> Option<(&str, bool)> {
    let rest = data.strip_prefix("q:")?;
    let (id, answer) = rest.rsplit_once(':')?;
    let yes = match answer {
        "y" => true,
        "n" => false,
        _ => return None,
    };
    (!id.is_empty()).then_some((id, yes))
}

/// Why a press was not counted (a `messages_dropped` reason), or `None` when it was.
pub(super) async fn handle(
    client: &Client,
    account: &AccountKey,
    owner: Option<&str>,
    answers: Option<&Arc<dyn ButtonAnswers>>,
    q: &CallbackQuery,
) -> Option<&'static str> {
    // At once, before any slow work; nothing is said, so a stranger learns nothing.
    if let Err(e) = client.answer_callback(&q.id, None).await {
        tracing::info!(account = %account, error = %e, "could not answer a button press");
    }
    let presser = q.from.id.to_string();
    if owner != Some(presser.as_str()) {
        return Some("not_owner_press");
    }
    let Some((question, yes)) = q.data.as_deref().and_then(parse) else {
        return Some("unknown_button");
    };
    let Some(answers) = answers else {
        return Some("no_answers");
    };
    let outcome = answers
        .press(ButtonPress {
            account: account.clone(),
            question_id: question.to_string(),
            yes,
            operator: SenderId::new(presser),
        })
        .await;
    let body = match outcome {
        PressOutcome::Recorded(b) => Some(b),
        PressOutcome::NotOpen(b) => b,
    };
    show(client, account, q, body.as_ref()).await;
    None
}

/// Edits the pressed message to how the question reads now (or just takes the keyboard away).
async fn show(client: &Client, account: &AccountKey, q: &CallbackQuery, body: Option<&Body>) {
    // `date` 0: the message is no longer accessible to the bot.
    let Some(m) = q.message.as_ref().filter(|m| m.date != 0) else {
        return;
    };
    let edited = match body {
        Some(Body::QuestionClosed(c)) => {
            let text = super::sender::closed_text(c);
            client
                .edit_text(m.chat.id, m.message_id, &text, None, None)
                .await
        }
        _ => client.edit_keyboard(m.chat.id, m.message_id, None).await,
    };
    if let Err(e) = edited {
        tracing::info!(account = %account, error = %e, "could not show how a question was answered");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_own_button_data_reads() {
        assert_eq!(parse("q:q-7:y"), Some(("q-7", true)));
        assert_eq!(parse("q:q-7:n"), Some(("q-7", false)));
        assert_eq!(parse("q:q-7:maybe"), None);
        assert_eq!(parse("q::y"), None);
        assert_eq!(parse("x:q-7:y"), None);
        assert_eq!(parse(""), None);
    }
}
