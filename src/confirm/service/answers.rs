//! Answers: text answers claimed from the pipeline, and the record of yes/no.

use crate::ids::OutboxKey;
use futures_util::future::BoxFuture;

use super::super::index::{Question, Target};
use super::super::{parse, text};
use super::{Answer, AnswerOutcome, Closed, ConfirmError, ConfirmService};
use crate::config::AccountKey;
use crate::conversation::{AccountLink, AnswerClaim, AnswerInterceptor, ChatId, Inbound};
use crate::protocol::ConfirmState;
use crate::words::Ask;

impl ConfirmService {
    /// Records yes/no for `seq` ("always" only where the question offered it). A replay of the
    /// same answering message counts as recorded.
    pub(super) async fn record(
        &self,
        seq: i64,
        answer: Answer,
        by: Option<&str>,
        msg: Option<&str>,
    ) -> Result<AnswerOutcome, ConfirmError> {
        let state = if answer.yes {
            ConfirmState::Yes
        } else {
            ConfirmState::No
        };
        match self.close(seq, state, None, by, msg, answer.always).await? {
            Closed::Now(q) => {
                tracing::info!(id = %q.id(), "question answered");
                tracing::debug!(id = %q.id(), answer = text::answer_word(state), "answer");
                Ok(AnswerOutcome::Recorded(state))
            }
            Closed::Already(row) if msg.is_some() && row.answer_msg.as_deref() == msg => {
                Ok(AnswerOutcome::Recorded(row.state))
            }
            Closed::Already(row) => Ok(AnswerOutcome::AlreadyClosed(row.state)),
        }
    }

    /// Handles an owner's text answer claimed by `wants` (again after a crash: idempotent).
    pub(super) async fn handle_text(&self, link: &AccountLink, msg: Inbound) {
        if link.owner.as_ref() != Some(&msg.sender) {
            return;
        }
        let Some(a) = parse::parse(&msg.text) else {
            return;
        };
        let now = self.clock.now_ms();
        let in_chat: Vec<Question> = {
            let idx = self.lock();
            idx.due(now)
                .into_iter()
                .filter_map(|(seq, _)| idx.get(seq).cloned())
                .filter(|q| {
                    q.account.as_ref() == Some(&msg.account) && q.row.in_chat(msg.chat.as_str())
                })
                .collect()
        };
        for q in &in_chat {
            // A late answer must find the question already withdrawn or expired, as a poll would.
            if let Err(e) = self.settle(q, now).await {
                tracing::error!(id = %q.id(), error = %e, "cannot settle a question");
            }
        }
        let target = self.lock().target(&msg.account, msg.chat.as_str(), &a, now);
        let lang = self.lang_of(&msg.account, msg.chat.as_str()).await;
        let reply = match target {
            Target::One(seq) => {
                let code = self
                    .lock()
                    .get(seq)
                    .map(|q| q.row.code.clone())
                    .unwrap_or_default();
                match self
                    .record(
                        seq,
                        Answer {
                            yes: a.yes,
                            always: a.always,
                        },
                        Some(msg.sender.as_str()),
                        Some(msg.msg_id.as_str()),
                    )
                    .await
                {
                    Ok(AnswerOutcome::Recorded(s)) => {
                        // Where the account can edit, the question shows the answer in place
                        // (again after a crash: same key).
                        let answered = self.lock().get(seq).cloned();
                        let always = answered.as_ref().is_some_and(|q| q.row.always);
                        if let Some(q) = answered {
                            let notice = text::closed_notice(s, &q.row.question, &q.row.code, lang);
                            self.update_in_place(&q, &notice).await;
                        }
                        if always {
                            Ask::RecordedAlways { code }.text(lang).into_owned()
                        } else {
                            text::recorded(s, &code, lang)
                        }
                    }
                    Ok(AnswerOutcome::AlreadyClosed(s)) => text::already_closed(s, &code, lang),
                    Err(e) => {
                        tracing::error!(account = %msg.account, error = %e, "cannot record an answer");
                        Ask::NotRecorded.text(lang).into_owned()
                    }
                }
            }
            Target::Several(list) => text::which(&list, lang),
            Target::Nothing => {
                let moved = self.lock().moved_away(&msg.account, msg.chat.as_str(), &a);
                match moved {
                    Some((code, route)) => Ask::Moved { code, route }.text(lang).into_owned(),
                    None => Ask::NoOpenQuestion.text(lang).into_owned(),
                }
            }
        };
        let key = String::from(OutboxKey::confirm_reply(&msg.account, &msg.msg_id));
        if let Err(e) = self
            .outbox
            .send_proactive(&msg.account, &msg.chat, &reply, None, &key)
            .await
        {
            tracing::error!(account = %msg.account, error = %e, "cannot queue the reply to an answer");
        }
    }
}

impl AnswerInterceptor for ConfirmService {
    fn claim(
        &self,
        account: &AccountKey,
        chat: &ChatId,
        from_owner: bool,
        text: &str,
    ) -> AnswerClaim {
        if !from_owner {
            return AnswerClaim::None;
        }
        let Some(a) = parse::parse(text) else {
            return AnswerClaim::None;
        };
        let now = self.clock.now_ms();
        self.lock().claims(account, chat.as_str(), &a, now)
    }

    fn open_questions(&self, account: &AccountKey, chat: &ChatId) -> Vec<(String, String)> {
        self.lock().pending_in(account, chat.as_str())
    }

    fn handle<'a>(&'a self, link: &'a AccountLink, msg: Inbound) -> BoxFuture<'a, ()> {
        Box::pin(self.handle_text(link, msg))
    }
}
