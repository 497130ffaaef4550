//! A click on a question card's button (spec §4.7): counted only from the owner and only once
//! per click event, handed to the port's answers, and the card then replaced within WeCom's
//! 5 s window by one that says how the question ended. A click by anyone else changes nothing
//! (there is no toast to show them).

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use scv_wecom::card::answered_card;
use scv_wecom::{Connection, ReplyHandle};

use super::inbound::Click;
use crate::conversation::body::Ending;
use crate::conversation::{Body, ButtonAnswers, ButtonPress, PressOutcome};
use crate::ids::{AccountKey, SenderId};
use crate::words::{Card, Language};

/// Click events remembered for deduplication (WeCom may deliver one twice, §2.1).
const REMEMBERED: usize = 4096;

/// Click `msgid`s already handled in this run.
#[derive(Default)]
pub(super) struct SeenClicks {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl SeenClicks {
    /// True the first time `msgid` is offered.
    pub fn first(&mut self, msgid: &str) -> bool {
        if !self.set.insert(msgid.to_string()) {
            return false;
        }
        self.order.push_back(msgid.to_string());
        if self.order.len() > REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        true
    }
}

/// What the click handler needs of the run.
pub(super) struct ClickContext<'a> {
    pub conn: &'a Connection,
    pub account: &'a AccountKey,
    pub owner: Option<&'a str>,
    pub answers: Option<&'a Arc<dyn ButtonAnswers>>,
    pub language: Language,
}

/// Why a click was not counted (a `messages_dropped` reason), or `None` when it was.
pub(super) async fn handle(
    cx: &ClickContext<'_>,
    click: &Click,
    handle: Option<ReplyHandle>,
) -> Option<&'static str> {
    if cx.owner != Some(click.userid.as_str()) {
        return Some("not_owner_press");
    }
    let Some(answers) = cx.answers else {
        return Some("no_answers");
    };
    let outcome = answers
        .press(ButtonPress {
            account: cx.account.clone(),
            question_id: click.question.clone(),
            yes: click.yes,
            operator: SenderId::new(click.userid.clone()),
        })
        .await;
    let body = match outcome {
        PressOutcome::Recorded(b) => Some(b),
        PressOutcome::NotOpen(b) => b,
    };
    // Without the click's handle (never so today) the card stays; the answer counted anyway.
    if let Some(handle) = handle {
        let title = title(body.as_ref(), click.yes).text_for(cx.language);
        let card = answered_card(&title, &click.question);
        let who = std::slice::from_ref(&click.userid);
        if let Err(e) = cx.conn.update_card(&handle, who, card).await {
            tracing::info!(account = %cx.account, error = %e, "could not show how a question was answered");
        }
    }
    None
}

/// The answered card's title: how the question ended, else what was pressed.
fn title(body: Option<&Body>, yes: bool) -> Card {
    match body {
        Some(Body::QuestionClosed(c)) => match c.ended {
            Ending::Approved => Card::Approved,
            Ending::Declined => Card::Declined,
            Ending::Expired => Card::Expired,
            Ending::Withdrawn => Card::Withdrawn,
            _ => Card::Closed,
        },
        _ if yes => Card::Approved,
        _ => Card::Declined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_click_event_counts_once() {
        let mut seen = SeenClicks::default();
        assert!(seen.first("E1"));
        assert!(!seen.first("E1"));
        for i in 0..REMEMBERED {
            seen.first(&format!("x{i}"));
        }
        assert!(seen.first("E1"), "forgotten after {REMEMBERED} others");
    }
}
