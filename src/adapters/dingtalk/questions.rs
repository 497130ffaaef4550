//! Confirm questions and tool approvals on a template card with callback buttons (spec §4.7 B),
//! when the account names a question card template; without one the sender's Yes / No links.
//!
//! The card is created with `callbackType: STREAM`, so a press comes back on this app's own
//! Stream connection as a push whose ACK carries the card's update. A press counts only from
//! the owner: the staff id (`userIdType` 1) of the owner in the robot's own corp, never the
//! encrypted sender id. The first press of a card wins; later ones change nothing. The card's
//! `answered` variable then says how the question ended, in the ACK itself: the platform's
//! deadline for the callback's answer is unconfirmed, so it is answered at once from what the
//! confirm service stored, and nothing slow runs before it.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use scv_dingtalk::callback::{CardCallback, card_update};
use scv_dingtalk::card::CardSpace;
use scv_dingtalk::confirm::{ANSWERED_KEY, Answer, QUESTION_KEY, question_of_track_id};
use scv_dingtalk::stream::AckReply;
use scv_dingtalk::{Client, confirm};

use super::reply::Target;
use crate::conversation::body::{Ending, Question, QuestionClosed};
use crate::conversation::{Body, ButtonAnswers, ButtonPress, PressOutcome, Sent};
use crate::ids::{AccountKey, PlatformMsgId, SenderId};
use crate::store::AccountState;
use crate::words::{Card, Language};

/// Card `outTrackId`s remembered as answered in this run (first press wins).
const REMEMBERED: usize = 4096;
/// The account-state name of the robot's corp id, learned from the messages it takes (a
/// press counts only from the owner in this corp).
pub(super) const CORP_STATE: &str = "dingtalk/robot_corp";
/// [`links_id`]'s prefix (no `outTrackId` of ours starts so).
const LINKS_PREFIX: &str = "scvl.";

/// Question cards of one account's template. Made by the sender when the account names one.
pub(super) struct QuestionCards {
    client: Client,
    template: String,
    account: AccountKey,
}

impl QuestionCards {
    pub fn new(client: Client, template: String, account: AccountKey) -> Self {
        QuestionCards {
            client,
            template,
            account,
        }
    }

    /// Delivers question `q` (its text `text`, with the code, so a typed answer works too) on a
    /// card; `None` when no card could go (the sender then sends the links). Someone outside
    /// the org has no card space.
    pub async fn send(&self, target: &Target, text: &str, q: &Question) -> Option<Sent> {
        let space = match target {
            Target::User(s) => CardSpace::Direct {
                staff_id: s.clone(),
            },
            Target::Group(g) => CardSpace::Group {
                open_conversation_id: g.clone(),
            },
            Target::Webhook(_) => return None,
        };
        let id = confirm::question_track_id(&q.id);
        let question = scv_dingtalk::markdown::render(text);
        let params = [(QUESTION_KEY, question.as_str()), (ANSWERED_KEY, "")];
        match self
            .client
            .create_card(&self.template, &id, &space, &params)
            .await
        {
            Ok(()) => Some(Sent {
                msg_id: Some(PlatformMsgId::new(id)),
                chat: None,
            }),
            Err(e) => {
                tracing::info!(account = %self.account, error = %e, "no question card; the question goes with links");
                None
            }
        }
    }
}

/// What a press is judged against. Made by the intake for each press.
pub(super) struct PressContext<'a> {
    pub account: &'a AccountKey,
    pub owner: Option<&'a str>,
    /// The robot's corp id, when a message has shown it.
    pub corp: Option<&'a str>,
    pub answers: Option<&'a Arc<dyn ButtonAnswers>>,
    pub language: Language,
}

/// Cards answered in this run.
#[derive(Default)]
pub(super) struct Answered {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Answered {
    /// True the first time `out_track_id` is offered.
    fn first(&mut self, out_track_id: &str) -> bool {
        if !self.set.insert(out_track_id.to_string()) {
            return false;
        }
        self.order.push_back(out_track_id.to_string());
        if self.order.len() > REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        true
    }
}

/// The platform id a question not on a card reports when DingTalk gave none (a reply webhook
/// answers without one), so the pipeline can still ask the sender to show it closed.
pub(super) fn links_id(qid: &str) -> PlatformMsgId {
    PlatformMsgId::new(format!("{LINKS_PREFIX}{qid}"))
}

/// Shows question `c` closed on the message `target` that asked it: a question card says how
/// it ended (its buttons then hide); a message with links cannot change, which is enough for
/// an answer (the typed answer's reply, or the console, said it), while for an expiry or a
/// withdrawal the refusal makes the pipeline send the notice as a new message.
pub(super) async fn show_closed(
    client: &Client,
    target: &PlatformMsgId,
    c: &QuestionClosed,
    language: Language,
) -> Result<(), Option<scv_dingtalk::Error>> {
    if question_of_track_id(target.as_str()).is_some() {
        let closed = Body::QuestionClosed(c.clone());
        let said = title(Some(&closed), false).text_for(language);
        return client
            .update_card(target.as_str(), &[(ANSWERED_KEY, &said)])
            .await
            .map_err(Some);
    }
    match c.ended {
        Ending::Approved | Ending::Declined => Ok(()),
        _ => Err(None),
    }
}

/// Judges one press: the ACK to send and, when it did not count, why (a `messages_dropped`
/// reason).
pub(super) async fn press(
    cx: &PressContext<'_>,
    seen: &mut Answered,
    c: &CardCallback,
) -> (AckReply, Option<&'static str>) {
    let (Some(qid), Some(answer)) = (question_of_track_id(&c.out_track_id), c.answer()) else {
        return (AckReply::Done, Some("unknown_button"));
    };
    let owner = c
        .owner_key()
        .filter(|k| cx.owner == Some(k.staff_id.as_str()) && cx.corp == Some(k.corp_id.as_str()));
    let Some(owner) = owner else {
        return (AckReply::Done, Some("not_owner_press"));
    };
    let Some(answers) = cx.answers else {
        return (AckReply::Done, Some("no_answers"));
    };
    if !seen.first(&c.out_track_id) {
        return (AckReply::Done, Some("repeated_press"));
    }
    let yes = answer == Answer::Yes;
    let outcome = answers
        .press(ButtonPress {
            account: cx.account.clone(),
            question_id: qid.to_string(),
            yes,
            operator: SenderId::new(owner.staff_id),
        })
        .await;
    let body = match outcome {
        PressOutcome::Recorded(b) => Some(b),
        PressOutcome::NotOpen(b) => b,
    };
    let said = title(body.as_ref(), yes).text_for(cx.language);
    (AckReply::Card(card_update(&[(ANSWERED_KEY, &said)])), None)
}

/// How the card says the question ended, else what was pressed.
pub(super) fn title(body: Option<&Body>, yes: bool) -> Card {
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

/// The robot's corp id as stored, and stores `seen` when it differs.
pub(super) async fn learn_corp(state: &AccountState, known: &mut Option<String>, seen: &str) {
    if seen.is_empty() || known.as_deref() == Some(seen) {
        return;
    }
    *known = Some(seen.to_string());
    if let Err(e) = state.put(CORP_STATE, seen).await {
        tracing::warn!(error = %e, "cannot store the robot's corp id; it lasts until restart");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::BoxFuture;
    use std::sync::Mutex;

    /// Records presses and says each is recorded (declined or approved).
    #[derive(Default)]
    struct Presses(Mutex<Vec<ButtonPress>>);

    impl ButtonAnswers for Presses {
        fn press(&self, press: ButtonPress) -> BoxFuture<'_, PressOutcome> {
            let ended = if press.yes {
                Ending::Approved
            } else {
                Ending::Declined
            };
            let body = Body::QuestionClosed(QuestionClosed {
                id: press.question_id.clone(),
                ended,
                text: String::new(),
                code: String::new(),
                at: String::new(),
            });
            if let Ok(mut p) = self.0.lock() {
                p.push(press);
            }
            Box::pin(async move { PressOutcome::Recorded(body) })
        }
    }

    fn callback(track: &str, user: &str, corp: &str, answer: &str) -> CardCallback {
        let content = serde_json::json!({"cardPrivateData": {"params": {"answer": answer}}});
        let data = serde_json::json!({
            "outTrackId": track, "userId": user, "userIdType": 1, "corpId": corp,
            "content": content.to_string(),
        });
        CardCallback::parse(&data.to_string()).expect("callback")
    }

    #[tokio::test]
    async fn only_the_owner_of_the_robots_corp_answers_a_question_card_once() {
        let presses = Arc::new(Presses::default());
        let answers: Arc<dyn ButtonAnswers> = presses.clone();
        let account = AccountKey::parse("dingtalk:team").expect("key");
        let cx = PressContext {
            account: &account,
            owner: Some("boss"),
            corp: Some("corp1"),
            answers: Some(&answers),
            language: Language::En,
        };
        let mut seen = Answered::default();
        let card = confirm::question_track_id("q-4");
        let cases = [
            (callback(&card, "boss", "corp2", "yes"), "not_owner_press"),
            (callback(&card, "other", "corp1", "yes"), "not_owner_press"),
            (
                callback("scv-0af3", "boss", "corp1", "yes"),
                "unknown_button",
            ),
            (callback(&card, "boss", "corp1", "maybe"), "unknown_button"),
        ];
        for (c, why) in cases {
            let (reply, dropped) = press(&cx, &mut seen, &c).await;
            assert_eq!((reply, dropped), (AckReply::Done, Some(why)));
        }
        let (reply, dropped) = press(&cx, &mut seen, &callback(&card, "boss", "corp1", "no")).await;
        assert_eq!(dropped, None);
        assert_eq!(
            reply,
            AckReply::Card(card_update(&[(ANSWERED_KEY, "❌ Declined")]))
        );
        let again = press(&cx, &mut seen, &callback(&card, "boss", "corp1", "yes")).await;
        assert_eq!(again, (AckReply::Done, Some("repeated_press")));
        let seen = presses.0.lock().expect("presses").clone();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (
                seen[0].question_id.as_str(),
                seen[0].yes,
                seen[0].operator.as_str()
            ),
            ("q-4", false, "boss")
        );
        // Without a corp learned, not even the owner's press counts.
        let cx = PressContext { corp: None, ..cx };
        let other = confirm::question_track_id("q-5");
        let (_, dropped) = press(
            &cx,
            &mut Answered::default(),
            &callback(&other, "boss", "corp1", "yes"),
        )
        .await;
        assert_eq!(dropped, Some("not_owner_press"));
    }

    #[test]
    fn a_card_counts_once() {
        let mut seen = Answered::default();
        assert!(seen.first("scvq.q-1.ff"));
        assert!(!seen.first("scvq.q-1.ff"));
        for i in 0..REMEMBERED {
            seen.first(&format!("x{i}"));
        }
        assert!(
            seen.first("scvq.q-1.ff"),
            "forgotten after {REMEMBERED} others"
        );
    }
}
