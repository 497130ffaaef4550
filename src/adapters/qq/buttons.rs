//! Yes/No buttons under a question (spec §4.5), only for an account whose `buttons` setting
//! says QQ granted it keyboards (invite-only; markdown too, since buttons hang under a markdown
//! message [official doc]). A click is acknowledged at once (or the button spins), counted only
//! from the owner (anyone else's is acknowledged with "no permission", code 4), and handed to the
//! port's answers. QQ cannot edit a sent message, so how the question reads now goes out as the
//! one passive reply the click's `event_id` allows (spec §4.5).

use std::sync::Arc;

use scv_qq::event::Interaction;
use scv_qq::{Body as QqBody, Button, ClickResult, Client, Reply, Target, Trigger};

use super::inbound::{chat_of, sender_of};
use crate::conversation::body::Ending;
use crate::conversation::{Body, ButtonAnswers, ButtonPress, PressOutcome};
use crate::ids::{AccountKey, SenderId};
use crate::words::{Card, Lang, Language};

/// The keyboard of question `id`: one row, Yes and No, each carrying `q:<id>:y|n`. Everyone may
/// press (the owner's id differs per scene, spec §3.1); the click handler counts the owner only.
pub(super) fn keyboard(id: &str, language: Language) -> Vec<Vec<Button>> {
    let button = |yes: bool| {
        let card = if yes { Card::Yes } else { Card::No };
        // A label is one short line: both languages side by side when the reader's is unknown.
        let label = match language.fixed() {
            Some(lang) => card.text(lang).into_owned(),
            None => format!("{} / {}", card.text(Lang::En), card.text(Lang::ZhCn)),
        };
        Button {
            id: if yes { "y" } else { "n" }.to_string(),
            visited_label: label.clone(),
            label,
            data: format!("q:{id}:{}", if yes { "y" } else { "n" }),
            only: None,
        }
    };
    vec![vec![button(true), button(false)]]
}

/// What a button's data says: (question id, yes).
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

/// What the click handler needs of the run.
pub(super) struct Clicks<'a> {
    pub client: &'a Client,
    pub account: &'a AccountKey,
    pub owner: Option<&'a str>,
    pub answers: Option<Arc<dyn ButtonAnswers>>,
    pub language: Language,
}

/// Why a click was not counted (a `messages_dropped` reason), or `None` when it was.
pub(super) async fn handle(cx: &Clicks<'_>, click: &Interaction) -> Option<&'static str> {
    let presser = sender_of(&click.scene);
    let parsed = parse(&click.button_data);
    let (result, dropped) = match (cx.owner == Some(presser), parsed, &cx.answers) {
        (false, _, _) => (ClickResult::NoPermission, Some("not_owner_press")),
        (true, None, _) => (ClickResult::Failed, Some("unknown_button")),
        (true, Some(_), None) => (ClickResult::Failed, Some("no_answers")),
        (true, Some(_), Some(_)) => (ClickResult::Ok, None),
    };
    // At once, before any slow work (spec §4.5).
    if let Err(e) = cx.client.ack_interaction(&click.id, result).await {
        tracing::debug!(account = %cx.account, error = %e, "acknowledging a click failed");
    }
    if dropped.is_some() {
        return dropped;
    }
    if let (Some((question, yes)), Some(answers)) = (parsed, &cx.answers) {
        let outcome = answers
            .press(ButtonPress {
                account: cx.account.clone(),
                question_id: question.to_string(),
                yes,
                operator: SenderId::new(presser),
            })
            .await;
        let body = match outcome {
            PressOutcome::Recorded(b) => Some(b),
            PressOutcome::NotOpen(b) => b,
        };
        show(cx, click, body.as_ref(), yes).await;
    }
    None
}

/// Replies to the click with how the question reads now (best effort: the answer is recorded
/// whether or not this arrives).
async fn show(cx: &Clicks<'_>, click: &Interaction, body: Option<&Body>, yes: bool) {
    let card = match body {
        Some(Body::QuestionClosed(c)) => match c.ended {
            Ending::Approved => Card::Approved,
            Ending::Declined => Card::Declined,
            Ending::Expired => Card::Expired,
            Ending::Withdrawn => Card::Withdrawn,
            Ending::Failed => Card::Closed,
        },
        _ if yes => Card::Approved,
        _ => Card::Declined,
    };
    let chat = chat_of(&click.scene);
    let target = match chat.as_str().strip_prefix("g:") {
        Some(group) => Target::Group(group.to_string()),
        None => Target::User(chat.as_str().to_string()),
    };
    let reply = Reply {
        trigger: Trigger::Event(click.id.clone()),
        msg_seq: 1,
    };
    let text = QqBody::Text(card.text_for(cx.language).into_owned());
    if let Err(e) = cx.client.send(&target, Some(&reply), &text).await {
        tracing::debug!(account = %cx.account, error = %e, "showing a click's outcome failed");
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
        assert_eq!(parse(""), None);
        let k = keyboard("q-7", Language::En);
        assert_eq!(k[0][0].data, "q:q-7:y");
        assert_eq!(k[0][1].label, "No");
        assert_eq!(keyboard("q-7", Language::Auto)[0][0].label, "Yes / 同意");
    }
}
