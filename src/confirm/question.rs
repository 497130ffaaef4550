//! One question as the service tracks it, how it is made in each of the ways a question comes
//! to be remembered, and what it shows (its wire view, its body in the chat). Pure: no store, no
//! outbox, no clock of its own; the service passes `now` in. Made by [`super::index::Index`]'s
//! callers (the service); the field meanings stay stable, since the deadline loop and `wants`
//! read them.

use chrono_tz::Tz;

use super::db::Row;
use super::index::{FIRST_CHECK_MS, WITHDRAW_AFTER_MS};
use super::text;
use crate::config::AccountKey;
use crate::conversation::Body;
use crate::conversation::body::{Ending, Question as QuestionBody, QuestionClosed};
use crate::ids::QuestionId;
use crate::protocol::{ConfirmInfo, ConfirmState};

/// One question as the service tracks it.
#[derive(Debug, Clone)]
pub struct Question {
    /// What is stored.
    pub row: Row,
    /// The account asked (None: it had nowhere to go).
    pub account: Option<AccountKey>,
    /// The last `confirm_ask` / `confirm_status` about it.
    pub last_poll_ms: u64,
    /// The question message has left the outbox.
    pub delivered: bool,
    /// When to look at the outbox next (undelivered, pending questions only).
    pub next_check_ms: u64,
    /// This service put "a question waits ..." in the account's health.
    pub noted: bool,
    /// The account and chat it waited in before it moved to the owner's next route
    /// (`service/moved.rs`): an answer there is not counted, and the owner is told where it
    /// went.
    pub moved_from: Option<(AccountKey, String)>,
}

impl Question {
    /// A question just stored by `confirm_ask`: polled now, not yet out, looked at soon.
    pub fn asked(row: Row, account: Option<AccountKey>, now_ms: u64) -> Self {
        Question {
            row,
            account,
            last_poll_ms: now_ms,
            delivered: false,
            next_check_ms: now_ms + FIRST_CHECK_MS,
            noted: false,
            moved_from: None,
        }
    }

    /// A stored question loaded at start. A restart is not the asker's silence: pollers get a
    /// fresh minute to reconnect. A pending one is looked at again soon (it is re-queued under
    /// the same key); a closed one has nothing left to deliver.
    pub fn restored(row: Row, now_ms: u64) -> Self {
        let open = row.state == ConfirmState::Pending;
        Question {
            account: AccountKey::parse(&row.account),
            row,
            last_poll_ms: now_ms,
            delivered: !open,
            next_check_ms: now_ms + FIRST_CHECK_MS,
            noted: false,
            moved_from: None,
        }
    }

    /// A stored question no longer remembered (closed long ago), read for its status only.
    pub fn stored(row: Row, now_ms: u64) -> Self {
        Question {
            account: AccountKey::parse(&row.account),
            row,
            last_poll_ms: now_ms,
            delivered: true,
            next_check_ms: now_ms,
            noted: false,
            moved_from: None,
        }
    }

    /// The wire id.
    pub fn id(&self) -> String {
        QuestionId(self.row.seq).to_string()
    }

    /// When it becomes due for expiry (or failure), in Unix ms.
    pub fn deadline_ms(&self) -> u64 {
        self.row.deadline_unix * 1000
    }

    /// When it becomes due for withdrawal, in Unix ms.
    pub fn withdraw_ms(&self) -> u64 {
        self.last_poll_ms + WITHDRAW_AFTER_MS
    }

    /// The wire view (`confirm_status`): the reason only for a failed question.
    pub fn info(&self) -> ConfirmInfo {
        ConfirmInfo {
            id: self.id(),
            state: self.row.state,
            chat: self.row.account.clone(),
            deadline_unix_seconds: self.row.deadline_unix,
            reason: (self.row.state == ConfirmState::Failed)
                .then(|| self.row.reason.clone())
                .flatten(),
        }
    }

    /// What its chat shows at `now_unix`: the question while pending, how it ended after.
    /// `buttons`: its account can show buttons; a question offering "always" still goes as
    /// text, since cards have only yes and no, and the text says how to answer it.
    pub fn body(&self, buttons: bool, tz: Option<Tz>, now_unix: u64) -> Body {
        let row = &self.row;
        let ended = match row.state {
            ConfirmState::Pending => {
                return Body::Question(QuestionBody {
                    id: self.id(),
                    text: row.question.clone(),
                    code: row.code.clone(),
                    deadline: text::deadline_text(row.deadline_unix, now_unix, tz),
                    buttons: buttons && !row.offers_always,
                });
            }
            ConfirmState::Yes => Ending::Approved,
            ConfirmState::No => Ending::Declined,
            ConfirmState::Expired => Ending::Expired,
            ConfirmState::Withdrawn => Ending::Withdrawn,
            _ => Ending::Failed,
        };
        let at = row.closed_ms.map_or(row.deadline_unix, |c| c / 1000);
        Body::QuestionClosed(QuestionClosed {
            id: self.id(),
            ended,
            text: row.question.clone(),
            code: row.code.clone(),
            at: text::deadline_text(at, now_unix, tz),
        })
    }
}

/// `q-7` → 7.
pub fn parse_id(id: &str) -> Option<i64> {
    id.strip_prefix("q-")?.parse().ok().filter(|n| *n > 0)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::config::Channel;

    /// A question of `wechat:phone` in `chat`, closed at 10 s unless pending.
    pub fn q(seq: i64, chat: &str, code: &str, state: ConfirmState) -> Question {
        let row = Row {
            seq,
            account: format!("{}:phone", Channel::ALL[0].as_str()),
            chat: chat.into(),
            code: code.into(),
            question: format!("question {seq}"),
            state,
            reason: None,
            created_ms: 0,
            deadline_unix: 1_000,
            message_key: format!("confirm/q-{seq}/ask"),
            answer_msg: None,
            closed_ms: (state != ConfirmState::Pending).then_some(10_000),
            platform_msg: None,
            platform_chat: None,
            offers_always: false,
            always: false,
        };
        let mut q = Question::restored(row, 0);
        q.delivered = true;
        q.next_check_ms = 0;
        q
    }

    #[test]
    fn ids_are_q_dash_positive_numbers() {
        assert_eq!(parse_id("q-7"), Some(7));
        assert_eq!(parse_id("q-0"), None);
        assert_eq!(parse_id("7"), None);
        assert_eq!(parse_id("q-x"), None);
    }

    #[test]
    fn each_way_of_remembering_a_question_starts_its_clocks_where_it_should() {
        let row = q(3, "o", "7F", ConfirmState::Pending).row;
        let asked = Question::asked(row.clone(), None, 1_000);
        assert_eq!(
            (asked.last_poll_ms, asked.delivered, asked.next_check_ms),
            (1_000, false, 1_000 + FIRST_CHECK_MS)
        );
        assert_eq!(asked.account, None, "asked with nowhere to go");
        let restored = Question::restored(row.clone(), 2_000);
        assert_eq!(
            restored.account,
            Some(AccountKey::new(Channel::ALL[0], "phone"))
        );
        assert_eq!(
            (restored.last_poll_ms, restored.delivered),
            (2_000, false),
            "a pending question is looked at again after a restart"
        );
        let closed = q(4, "o", "3K", ConfirmState::Yes).row;
        assert!(Question::restored(closed.clone(), 2_000).delivered);
        let stored = Question::stored(closed, 3_000);
        assert_eq!((stored.delivered, stored.next_check_ms), (true, 3_000));
    }

    #[test]
    fn the_wire_view_gives_a_reason_only_for_a_failed_question() {
        let mut x = q(5, "o", "7F", ConfirmState::Expired);
        x.row.reason = Some("nobody".into());
        assert_eq!(x.info().reason, None);
        assert_eq!(x.info().id, "q-5");
        x.row.state = ConfirmState::Failed;
        assert_eq!(x.info().reason.as_deref(), Some("nobody"));
    }

    #[test]
    fn a_pending_question_shows_buttons_only_where_it_offers_no_always() {
        let mut x = q(6, "o", "7F", ConfirmState::Pending);
        let buttons = |x: &Question, can| match x.body(can, None, 0) {
            Body::Question(b) => b.buttons,
            other => panic!("expected the question, got {other:?}"),
        };
        assert!(buttons(&x, true));
        assert!(!buttons(&x, false), "an account without buttons");
        x.row.offers_always = true;
        assert!(!buttons(&x, true), "cards have only yes and no");
        x.row.state = ConfirmState::No;
        match x.body(true, None, 0) {
            Body::QuestionClosed(c) => assert_eq!(c.ended, Ending::Declined),
            other => panic!("expected the closed question, got {other:?}"),
        }
    }
}
