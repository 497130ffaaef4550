//! The question store: the questions in memory and every change of their state there, pure (no
//! store, no outbox, no clock: the service passes `now` in and does the I/O around each
//! change). What `wants` (sync, on every inbound message) and the deadline loop read.

use std::collections::BTreeMap;

use super::db::Row;
use super::parse::{self, TextAnswer};
pub use super::question::Question;
use super::question::parse_id;
use crate::config::AccountKey;
use crate::conversation::AnswerClaim;
use crate::protocol::ConfirmState;

/// A question nobody asks about for this long is withdrawn.
pub const WITHDRAW_AFTER_MS: u64 = 60_000;
/// A bare answer this soon after a question in the chat closed is taken as meant for it.
pub const RECENT_MS: u64 = 5 * 60_000;
/// Closed questions stay in memory (and keep their codes) this long.
pub const KEEP_CLOSED_MS: u64 = 60 * 60_000;
/// The first look at whether the question message went out, after asking.
pub const FIRST_CHECK_MS: u64 = 5_000;
/// Later looks, while it has not.
pub const CHECK_EVERY_MS: u64 = 15_000;

/// What is due for a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Nobody polled it for a minute (that moment came before the deadline).
    Withdraw,
    /// The deadline passed: expired, or failed when never delivered.
    Deadline,
    /// Look whether the question message went out.
    CheckDelivery,
    /// Closed long ago: forget it.
    Evict,
}

/// Where a text answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This question.
    One(i64),
    /// A bare answer with several pending: the bridge asks which (`(code, question)` each).
    Several(Vec<(String, String)>),
    /// Nothing in this chat (it closed and was forgotten meanwhile).
    Nothing,
}

/// Why [`Index::pick`] found no one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// No question has this id, and no pending one this code.
    NotFound,
    /// Several pending questions use this code: answer by id.
    Several,
}

/// Every question the service remembers, by `seq`.
#[derive(Default)]
pub struct Index {
    questions: BTreeMap<i64, Question>,
}

impl Index {
    /// Adds or replaces a question.
    pub fn put(&mut self, q: Question) {
        self.questions.insert(q.row.seq, q);
    }

    /// Every question remembered, by sequence number.
    pub fn all(&self) -> impl Iterator<Item = &Question> {
        self.questions.values()
    }

    /// One question.
    pub fn get(&self, seq: i64) -> Option<&Question> {
        self.questions.get(&seq)
    }

    /// One question, to change.
    pub fn get_mut(&mut self, seq: i64) -> Option<&mut Question> {
        self.questions.get_mut(&seq)
    }

    /// Forgets a question.
    pub fn remove(&mut self, seq: i64) {
        self.questions.remove(&seq);
    }

    /// A poll (`confirm_status`) keeps a pending question alive; returns it as it is now.
    pub fn polled(&mut self, seq: i64, now_ms: u64) -> Option<Question> {
        let q = self.questions.get_mut(&seq)?;
        if q.row.state == ConfirmState::Pending {
            q.last_poll_ms = now_ms;
        }
        Some(q.clone())
    }

    /// The store closed (or found closed) question `seq` as `row`: the remembered question takes
    /// the stored row. Returns it, or `None` when it is not remembered.
    pub fn closed(&mut self, seq: i64, row: Row) -> Option<Question> {
        let q = self.questions.get_mut(&seq)?;
        q.row = row;
        Some(q.clone())
    }

    /// The question message went out: delivered, with the platform's message id and the chat it
    /// landed in (kept only when it is not the chat asked). Returns it.
    pub fn sent(
        &mut self,
        seq: i64,
        msg: Option<String>,
        chat: Option<String>,
    ) -> Option<Question> {
        let q = self.questions.get_mut(&seq)?;
        q.delivered = true;
        q.row.platform_msg = msg;
        q.row.platform_chat = chat.filter(|c| *c != q.row.chat);
        Some(q.clone())
    }

    /// Look at whether question `seq` went out again at `at_ms`.
    pub fn check_at(&mut self, seq: i64, at_ms: u64) {
        if let Some(q) = self.questions.get_mut(&seq) {
            q.next_check_ms = at_ms;
        }
    }

    /// Records whether the service's "a question waits" note in health is (still) about `seq`.
    pub fn set_noted(&mut self, seq: i64, noted: bool) {
        if let Some(q) = self.questions.get_mut(&seq) {
            q.noted = noted;
        }
    }

    /// The question an answer given outside text names: `q-7`, or a code (`7F`) exactly one
    /// pending question has.
    pub fn pick(&self, id_or_code: &str) -> Result<i64, Pick> {
        if let Some(seq) = parse_id(id_or_code) {
            return Ok(seq);
        }
        if !parse::is_code(id_or_code) {
            return Err(Pick::NotFound);
        }
        match self
            .pending_with_code(&id_or_code.to_ascii_uppercase())
            .as_slice()
        {
            [one] => Ok(*one),
            [] => Err(Pick::NotFound),
            _ => Err(Pick::Several),
        }
    }

    /// Questions of one chat (asked there, or landed there).
    fn in_chat<'a>(
        &'a self,
        account: &'a AccountKey,
        chat: &'a str,
    ) -> impl Iterator<Item = &'a Question> + 'a {
        self.questions
            .values()
            .filter(move |q| q.account.as_ref() == Some(account) && q.row.in_chat(chat))
    }

    /// A code no remembered question of this chat uses, starting the search at `start`.
    pub fn free_code(&self, account: &AccountKey, chat: &str, start: usize) -> Option<String> {
        let used: Vec<&str> = self
            .in_chat(account, chat)
            .map(|q| q.row.code.as_str())
            .collect();
        (0..parse::code_count())
            .map(|i| parse::code_at(start + i))
            .find(|c| !used.contains(&c.as_str()))
    }

    /// Whether `answer` in this chat is meant for a question here (the sync check before
    /// journaling): one it names by code or a pending one is `Open`; a bare answer that only a
    /// question closed less than [`RECENT_MS`] ago would take is `Closed`, which an open
    /// mail-reply draft in the same chat takes first.
    pub fn claims(
        &self,
        account: &AccountKey,
        chat: &str,
        a: &TextAnswer,
        now_ms: u64,
    ) -> AnswerClaim {
        let mut claim = AnswerClaim::None;
        for q in self.in_chat(account, chat) {
            match &a.code {
                Some(code) if &q.row.code == code => return AnswerClaim::Open,
                Some(_) => {}
                None if q.row.state == ConfirmState::Pending => return AnswerClaim::Open,
                None if q.row.closed_ms.is_some_and(|c| now_ms < c + RECENT_MS) => {
                    claim = AnswerClaim::Closed;
                }
                None => {}
            }
        }
        claim
    }

    /// The pending questions of a chat as `(code, question)`, oldest first.
    pub fn pending_in(&self, account: &AccountKey, chat: &str) -> Vec<(String, String)> {
        self.in_chat(account, chat)
            .filter(|q| q.row.state == ConfirmState::Pending)
            .map(|q| (q.row.code.clone(), q.row.question.clone()))
            .collect()
    }

    /// The question a text answer is for.
    pub fn target(&self, account: &AccountKey, chat: &str, a: &TextAnswer, now_ms: u64) -> Target {
        if let Some(code) = &a.code {
            return self
                .in_chat(account, chat)
                .filter(|q| &q.row.code == code)
                .max_by_key(|q| q.row.seq)
                .map_or(Target::Nothing, |q| Target::One(q.row.seq));
        }
        let pending: Vec<&Question> = self
            .in_chat(account, chat)
            .filter(|q| q.row.state == ConfirmState::Pending)
            .collect();
        match pending.as_slice() {
            [one] => Target::One(one.row.seq),
            [] => self
                .in_chat(account, chat)
                .filter(|q| q.row.closed_ms.is_some_and(|c| now_ms < c + RECENT_MS))
                .max_by_key(|q| q.row.closed_ms)
                .map_or(Target::Nothing, |q| Target::One(q.row.seq)),
            several => Target::Several(
                several
                    .iter()
                    .map(|q| (q.row.code.clone(), q.row.question.clone()))
                    .collect(),
            ),
        }
    }

    /// Pending questions whose code is `code`, anywhere.
    pub fn pending_with_code(&self, code: &str) -> Vec<i64> {
        self.questions
            .values()
            .filter(|q| q.row.state == ConfirmState::Pending && q.row.code == code)
            .map(|q| q.row.seq)
            .collect()
    }

    /// What is due for one question at `now_ms`.
    pub fn due_one(q: &Question, now_ms: u64) -> Option<Due> {
        if q.row.state != ConfirmState::Pending {
            return q
                .row
                .closed_ms
                .is_some_and(|c| now_ms >= c + KEEP_CLOSED_MS)
                .then_some(Due::Evict);
        }
        let (w, d) = (q.withdraw_ms(), q.deadline_ms());
        if now_ms >= w.min(d) {
            // Whichever moment came first decides: a poll gap before the deadline withdraws it.
            return Some(if w < d { Due::Withdraw } else { Due::Deadline });
        }
        (!q.delivered && now_ms >= q.next_check_ms).then_some(Due::CheckDelivery)
    }

    /// Everything due at `now_ms`.
    pub fn due(&self, now_ms: u64) -> Vec<(i64, Due)> {
        self.questions
            .values()
            .filter_map(|q| Self::due_one(q, now_ms).map(|d| (q.row.seq, d)))
            .collect()
    }

    /// The next moment something becomes due.
    pub fn next_wake(&self) -> Option<u64> {
        self.questions
            .values()
            .map(|q| match q.row.state {
                ConfirmState::Pending => {
                    let mut t = q.withdraw_ms().min(q.deadline_ms());
                    if !q.delivered {
                        t = t.min(q.next_check_ms);
                    }
                    t
                }
                _ => q.row.closed_ms.unwrap_or(0) + KEEP_CLOSED_MS,
            })
            .min()
    }

    /// Undelivered pending questions of `account` other than `seq` that this service noted in health.
    pub fn others_noted(&self, account: &AccountKey, seq: i64) -> bool {
        self.questions.values().any(|q| {
            q.row.seq != seq
                && q.noted
                && q.row.state == ConfirmState::Pending
                && q.account.as_ref() == Some(account)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::question::tests::q;
    use super::*;
    use crate::config::Channel;

    fn acc() -> AccountKey {
        AccountKey::new(Channel::Wechat, "phone")
    }

    fn ans(code: Option<&str>) -> TextAnswer {
        TextAnswer {
            yes: true,
            always: false,
            code: code.map(str::to_string),
        }
    }

    #[test]
    fn a_bare_answer_goes_to_the_only_pending_question_of_that_chat() {
        let mut i = Index::default();
        i.put(q(1, "o", "7F", ConfirmState::Pending));
        i.put(q(2, "other", "3K", ConfirmState::Pending));
        assert_eq!(i.target(&acc(), "o", &ans(None), 0), Target::One(1));
        assert_eq!(i.claims(&acc(), "o", &ans(None), 0), AnswerClaim::Open);
        assert_eq!(i.claims(&acc(), "nobody", &ans(None), 0), AnswerClaim::None);
        assert_eq!(
            i.claims(&acc(), "o", &ans(Some("3K")), 0),
            AnswerClaim::None,
            "a code of another chat"
        );
    }

    #[test]
    fn an_answer_from_the_chat_the_question_landed_in_counts() {
        let mut i = Index::default();
        let mut asked = q(1, "ou_owner", "7F", ConfirmState::Pending);
        asked.row.platform_chat = Some("oc_p2p".into());
        i.put(asked);
        assert_eq!(i.claims(&acc(), "oc_p2p", &ans(None), 0), AnswerClaim::Open);
        assert_eq!(
            i.claims(&acc(), "ou_owner", &ans(None), 0),
            AnswerClaim::Open
        );
        assert_eq!(i.target(&acc(), "oc_p2p", &ans(None), 0), Target::One(1));
        assert_eq!(
            i.claims(&acc(), "oc_group", &ans(None), 0),
            AnswerClaim::None
        );
    }

    #[test]
    fn several_pending_ask_which_and_a_code_picks_one() {
        let mut i = Index::default();
        i.put(q(1, "o", "7F", ConfirmState::Pending));
        i.put(q(2, "o", "3K", ConfirmState::Pending));
        match i.target(&acc(), "o", &ans(None), 0) {
            Target::Several(list) => assert_eq!(list.len(), 2),
            other => panic!("expected several, got {other:?}"),
        }
        assert_eq!(i.target(&acc(), "o", &ans(Some("3K")), 0), Target::One(2));
    }

    #[test]
    fn a_bare_answer_soon_after_closing_is_claimed_later_it_is_not() {
        let mut i = Index::default();
        i.put(q(1, "o", "7F", ConfirmState::Yes));
        assert_eq!(
            i.claims(&acc(), "o", &ans(None), 10_000 + RECENT_MS - 1),
            AnswerClaim::Closed
        );
        assert_eq!(
            i.claims(&acc(), "o", &ans(None), 10_000 + RECENT_MS),
            AnswerClaim::None
        );
        assert_eq!(
            i.claims(&acc(), "o", &ans(Some("7F")), 10_000 + RECENT_MS),
            AnswerClaim::Open
        );
        // A pending question beside a closed one makes a bare answer open.
        i.put(q(2, "o", "3K", ConfirmState::Pending));
        assert_eq!(i.claims(&acc(), "o", &ans(None), 10_000), AnswerClaim::Open);
        assert_eq!(
            i.pending_in(&acc(), "o"),
            vec![("3K".to_string(), "question 2".to_string())]
        );
        assert_eq!(
            i.free_code(&acc(), "o", parse::code_count() - 1),
            Some(parse::code_at(parse::code_count() - 1))
        );
        assert_ne!(i.free_code(&acc(), "o", 0).as_deref(), Some("7F"));
    }

    #[test]
    fn withdrawal_and_deadline_whichever_comes_first() {
        let mut x = q(1, "o", "7F", ConfirmState::Pending);
        x.row.deadline_unix = 100;
        x.last_poll_ms = 0;
        assert_eq!(Index::due_one(&x, 59_999), None);
        assert_eq!(Index::due_one(&x, 60_000), Some(Due::Withdraw));
        x.last_poll_ms = 50_000;
        assert_eq!(Index::due_one(&x, 99_999), None);
        assert_eq!(Index::due_one(&x, 100_000), Some(Due::Deadline));
        x.delivered = false;
        x.next_check_ms = 5_000;
        assert_eq!(Index::due_one(&x, 5_000), Some(Due::CheckDelivery));
        let mut i = Index::default();
        i.put(x);
        assert_eq!(i.next_wake(), Some(5_000));
    }

    #[test]
    fn a_poll_keeps_only_a_pending_question_alive() {
        let mut i = Index::default();
        i.put(q(1, "o", "7F", ConfirmState::Pending));
        i.put(q(2, "o", "3K", ConfirmState::Yes));
        assert_eq!(i.polled(1, 40_000).map(|q| q.last_poll_ms), Some(40_000));
        assert_eq!(
            i.polled(2, 40_000).map(|q| q.last_poll_ms),
            Some(0),
            "a closed question is not kept alive"
        );
        assert!(i.polled(9, 40_000).is_none(), "not remembered");
    }

    #[test]
    fn a_close_takes_the_stored_row() {
        let mut i = Index::default();
        i.put(q(1, "o", "7F", ConfirmState::Pending));
        let stored = q(1, "o", "7F", ConfirmState::Expired).row;
        let closed = i.closed(1, stored.clone()).expect("remembered");
        assert_eq!(closed.row.state, ConfirmState::Expired);
        assert_eq!(i.get(1).map(|q| q.row.state), Some(ConfirmState::Expired));
        assert_eq!(
            Index::due_one(&closed, 10_000),
            None,
            "closed: nothing due yet"
        );
        assert!(i.closed(9, stored).is_none(), "not remembered");
    }

    #[test]
    fn a_sent_question_is_delivered_and_answers_come_from_where_it_landed() {
        let mut i = Index::default();
        let mut x = q(1, "ou_owner", "7F", ConfirmState::Pending);
        x.delivered = false;
        x.next_check_ms = 5_000;
        i.put(x);
        assert_eq!(
            Index::due_one(i.get(1).expect("q"), 5_000),
            Some(Due::CheckDelivery)
        );
        let sent = i
            .sent(1, Some("m-1".into()), Some("ou_owner".into()))
            .expect("remembered");
        assert!(sent.delivered);
        assert_eq!(sent.row.platform_msg.as_deref(), Some("m-1"));
        assert_eq!(sent.row.platform_chat, None, "landed in the chat asked");
        assert_eq!(Index::due_one(&sent, 5_000), None, "nothing left to check");
        let sent = i.sent(1, None, Some("oc_p2p".into())).expect("remembered");
        assert_eq!(sent.row.platform_chat.as_deref(), Some("oc_p2p"));
        assert_eq!(i.claims(&acc(), "oc_p2p", &ans(None), 0), AnswerClaim::Open);
    }

    #[test]
    fn a_delivery_check_moves_to_the_time_it_is_given() {
        let mut i = Index::default();
        let mut x = q(1, "o", "7F", ConfirmState::Pending);
        x.delivered = false;
        i.put(x);
        i.check_at(1, 20_000);
        assert_eq!(i.next_wake(), Some(20_000));
        assert_eq!(i.due(19_999), vec![]);
        assert_eq!(i.due(20_000), vec![(1, Due::CheckDelivery)]);
    }

    #[test]
    fn a_note_stays_while_another_question_of_the_account_has_one() {
        let mut i = Index::default();
        i.put(q(1, "o", "7F", ConfirmState::Pending));
        i.put(q(2, "o", "3K", ConfirmState::Pending));
        i.set_noted(1, true);
        assert!(!i.others_noted(&acc(), 1), "no other question noted");
        i.set_noted(2, true);
        i.set_noted(2, false);
        assert!(i.others_noted(&acc(), 2), "question 1 still has its note");
        i.set_noted(1, false);
        assert!(!i.others_noted(&acc(), 2), "the last note went");
        i.set_noted(9, true);
        assert!(
            !i.others_noted(&acc(), 1),
            "a question not remembered has no note"
        );
    }

    #[test]
    fn an_answer_outside_text_names_its_question_by_id_or_by_a_code_only_one_has() {
        let mut i = Index::default();
        i.put(q(1, "o", "7F", ConfirmState::Pending));
        i.put(q(2, "other", "7F", ConfirmState::Pending));
        i.put(q(3, "o", "3K", ConfirmState::Pending));
        i.put(q(4, "o", "9X", ConfirmState::Yes));
        assert_eq!(i.pick("q-2"), Ok(2));
        assert_eq!(
            i.pick("q-99"),
            Ok(99),
            "an id is checked by whoever reads it"
        );
        assert_eq!(i.pick("3k"), Ok(3), "codes are read in either case");
        assert_eq!(i.pick("7F"), Err(Pick::Several));
        assert_eq!(i.pick("9X"), Err(Pick::NotFound), "closed");
        assert_eq!(i.pick("nonsense"), Err(Pick::NotFound));
    }
}
