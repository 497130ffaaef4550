//! The questions in memory: what `wants` (sync, on every inbound message) and the deadline loop read.

use crate::ids::QuestionId;
use std::collections::BTreeMap;

use super::db::Row;
use super::parse::{self, TextAnswer};
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
    /// The account and chat it waited in before it moved to the owner's next route: an
    /// answer there is not counted, and the owner is told where it went.
    pub moved_from: Option<(AccountKey, String)>,
}

impl Question {
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
}

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
        if matches!(claim, AnswerClaim::None) && self.moved_away(account, chat, a).is_some() {
            return AnswerClaim::Open;
        }
        claim
    }

    /// The pending question that left this chat for the owner's next route and that `a` may
    /// be for (its code, or any when bare), as `(code, route)`: the newest.
    pub fn moved_away(
        &self,
        account: &AccountKey,
        chat: &str,
        a: &TextAnswer,
    ) -> Option<(String, String)> {
        self.questions
            .values()
            .filter(|q| q.row.state == ConfirmState::Pending)
            .filter(|q| {
                q.moved_from
                    .as_ref()
                    .is_some_and(|(acc, c)| acc == account && c == chat)
            })
            .filter(|q| a.code.as_ref().is_none_or(|c| &q.row.code == c))
            .max_by_key(|q| q.row.seq)
            .map(|q| (q.row.code.clone(), q.row.account.clone()))
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
    use super::*;
    use crate::config::Channel;

    fn q(seq: i64, chat: &str, code: &str, state: ConfirmState) -> Question {
        Question {
            row: Row {
                seq,
                account: "wechat:phone".into(),
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
            },
            account: Some(AccountKey::new(Channel::Wechat, "phone")),
            last_poll_ms: 0,
            delivered: true,
            next_check_ms: 0,
            noted: false,
            moved_from: None,
        }
    }

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
}
