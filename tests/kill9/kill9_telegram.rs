//! `kill -9` at random points of the Telegram path: the real binary with the real Telegram
//! adapter (long poll, drafts in the private chat, one edited message per group answer) and the
//! OpenAI backend, against the Bot API and model fakes over real sockets, under a stream of
//! messages, SIGKILLed at a random point of each round's work, then restarted.
//!
//! A random point is a random count of things the fakes saw (polls, typing, drafts, sends,
//! model requests) after the spawn, so no clock decides it; the seed is printed and
//! `SCV_KILL9_SEED` replays it.
//!
//! Telegram confirms an update only by the next poll's offset, after the journal commit, so a
//! kill before the commit replays the batch and a kill after it is deduped by the journal. A
//! send has no dedupe key on Telegram, though: a kill after Telegram took a `sendMessage` and
//! before the outbox recorded it leaves that answer in doubt. The restart does not send it
//! again: it holds it and sends a note in its place (`port::held`), and the owner's `/again`
//! brings it. Such sends are counted from the store right after each kill (an outbox item
//! still pending whose text Telegram already took). At the end the owner sends `/again` where
//! an answer is missing, as the note says, and the test requires every answer shown, none shown
//! twice by the bridge's own choice, and reports those `/again` showed again. A streamed group
//! answer's finish is an edit, which repeats as "not modified", so there only the message's
//! first send can be in doubt: the restart holds what it carried and sends only the rest, so
//! the test counts paragraphs, not messages (such an answer arrives split in two).

use crate::process_support;
use crate::random_point::{Rng, seed};

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use process_support::bed::{ProcessBed, openai_agent, states};
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::secrets::Credentials;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_telegram::fake::{FakeConfig, FakeHandle, FakeServer};

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(20);
/// Rounds, each ended by a SIGKILL.
const ROUNDS: usize = 8;
/// The most things the fakes see before a round's kill.
const MAX_POINT: u64 = 18;

/// The answer the model writes to `question`: three paragraphs, long enough to be shown while
/// written, plain text that Telegram's HTML shows as it is.
fn answer(question: &str) -> String {
    format!(
        "Answer to {question}, the first part, with enough words to be shown while written.\n\nThe second part of the answer to {question}.\n\nThe third part of the answer to {question}, the end."
    )
}

/// One question the owner sent and where its answer belongs.
#[derive(Debug, Clone)]
struct Question {
    text: String,
    chat: i64,
}

struct Bed {
    p: ProcessBed,
    _server: FakeServer,
    fake: FakeHandle,
    model: FakeOpenAi,
}

impl Bed {
    async fn new() -> Bed {
        let config = FakeConfig::default();
        let owner = config.owner_id;
        let server = FakeServer::start_with(config.clone())
            .await
            .expect("fake telegram");
        let fake = server.handle();
        let model = FakeOpenAi::start().await.expect("fake model");
        model.respond_with(|r| {
            let q = r.messages.last().map(|m| m.content.clone())?;
            // A burst's prompt: each of its questions answered in turn.
            let parts = crate::bursts::questions(&q).map(answer);
            Some(Reply::text(&parts.collect::<Vec<_>>().join("\n\n")))
        });
        let p = ProcessBed::new(
            |_| {
                format!(
                    "{}[telegram.bot]\nbase_url = \"{}\"\nsenders = \"owner\"\nowner = {owner}\n",
                    openai_agent(&model.base_url(), "m", "SCV_KILL9_TELEGRAM_KEY"),
                    server.base_url(),
                )
            },
            &[("SCV_KILL9_TELEGRAM_KEY", "k")],
        );
        let id = config.token.split_once(':').map(|(i, _)| i).unwrap_or("");
        let login = Credentials::default()
            .with("bot_token", &config.token)
            .with("bot_id", id)
            .with("bot_username", &config.bot_username);
        p.save_login("telegram:bot", &login);
        Bed {
            p,
            _server: server,
            fake,
            model,
        }
    }

    fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    /// The owner writes `text` privately.
    fn ask_privately(&self, text: String) -> Question {
        let chat = self.fake.owner_chat();
        self.fake.push_text(chat.clone(), &text);
        Question {
            text,
            chat: chat.id,
        }
    }

    /// The owner @-mentions the bot with `text` in a group of its own (a group takes 20
    /// messages a minute, so distinct groups keep pacing out of the way).
    fn ask_in_group(&self, group: i64, text: String) -> Question {
        let chat = self.fake.group(group, "team");
        self.fake.push_message(serde_json::json!({
            "chat": chat, "from": self.fake.owner(), "text": format!("@scv_fake_bot {text}"),
            "entities": [{"type": "mention", "offset": 0, "length": 13}]
        }));
        Question { text, chat: group }
    }

    /// The owner asks for the held replies of `chat` again, as the note says.
    fn again(&self, chat: i64) {
        if chat == self.fake.owner_chat().id {
            self.fake.push_text(self.fake.owner_chat(), "/again");
            return;
        }
        let command = "/again@scv_fake_bot";
        self.fake.push_message(serde_json::json!({
            "chat": self.fake.group(chat, "team"), "from": self.fake.owner(), "text": command,
            "entities": [{"type": "bot_command", "offset": 0, "length": command.len()}]
        }));
    }

    /// The notes that stand in for held replies, by chat.
    fn notes(&self) -> BTreeMap<i64, usize> {
        let mut notes = BTreeMap::new();
        for s in self.fake.sent() {
            if s.text.contains("/again") {
                *notes.entry(s.chat_id).or_default() += 1;
            }
        }
        notes
    }

    /// Everything the fakes saw that a kill can land after.
    fn activity(&self) -> u64 {
        let f = &self.fake;
        (f.poll_requests() + f.sent().len() + f.drafts().len() + f.chat_actions().len()) as u64
            + self.model.requests().len() as u64
    }

    /// The chat's messages as shown now (after every edit), notes aside, without whitespace.
    fn shown_in(&self, chat: i64) -> Vec<String> {
        self.fake
            .sent()
            .iter()
            .filter(|s| s.chat_id == chat && !s.text.contains("/again"))
            .filter_map(|s| self.fake.message(s.chat_id, s.message_id))
            .map(|(t, _)| bare(&t))
            .collect()
    }

    /// How many times `q`'s whole answer shows where it was asked (as one message, or as the
    /// pieces a crash split it into, in any order), and how many of its characters show beyond
    /// one copy.
    fn tally(&self, q: &Question) -> (usize, usize) {
        let want = bare(&answer(&q.text));
        let shown = self.shown_in(q.chat);
        // Alone, or within a burst's answer.
        let whole = shown.iter().filter(|t| t.contains(want.as_str())).count();
        let pieces: Vec<&str> = shown
            .iter()
            .map(String::as_str)
            .filter(|t| !t.is_empty() && t.len() < want.len() && want.contains(t))
            .collect();
        let piece_chars: usize = pieces.iter().map(|p| p.len()).sum();
        let assembled = assembles(&want, &pieces);
        let copies = whole + usize::from(assembled);
        // Beyond one copy: a piece still waiting for its other part (held, not yet asked for)
        // is not a repeat.
        let extra = (whole * want.len() + piece_chars).saturating_sub(want.len());
        (copies, extra)
    }

    /// How many times `q`'s whole answer shows.
    fn showing(&self, q: &Question) -> usize {
        self.tally(q).0
    }

    /// Characters of `q`'s answer shown beyond one copy.
    fn repeated(&self, q: &Question) -> usize {
        self.tally(q).1
    }

    fn report(&self) -> String {
        let sent: Vec<(i64, String)> = self
            .fake
            .sent()
            .iter()
            .map(|s| {
                let now = self.fake.message(s.chat_id, s.message_id);
                (s.chat_id, now.map(|(t, _)| t).unwrap_or_default())
            })
            .collect();
        format!(
            "sent (as shown now): {sent:?}\npending updates: {}\nmodel asked {} times\nlog:\n{}",
            self.fake.pending(),
            self.model.requests().len(),
            self.p.log()
        )
    }

    /// Waits until `cond` holds, re-checked at every change of either fake.
    async fn until(&self, what: &str, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let model_changed = self.model.changed();
            if cond() {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what}\n{}",
                self.report()
            );
            tokio::select! {
                _ = self.fake.wait_until(left, |_| cond()) => {}
                _ = model_changed => {}
            }
        }
    }
}

/// `text` without whitespace (a piece cut by a crash is sent with its leading blanks trimmed).
fn bare(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Whether some of `pieces`, each used once, in some order, make exactly `want`.
fn assembles(want: &str, pieces: &[&str]) -> bool {
    if want.is_empty() {
        return true;
    }
    pieces.iter().enumerate().any(|(i, p)| {
        let rest: Vec<&str> = [&pieces[..i], &pieces[i + 1..]].concat();
        want.strip_prefix(p).is_some_and(|w| assembles(w, &rest))
    })
}

/// Answers the bot sent but the store had not recorded at the kill (each is sent again by the
/// restart: Telegram has no dedupe key), and streamed messages whose first send is in doubt
/// (recorded before the send, with no message id yet), both named so a later kill does not
/// count them again.
fn in_doubt(db: &Path, fake: &FakeHandle) -> (BTreeSet<String>, BTreeSet<String>) {
    let db = rusqlite::Connection::open(db).expect("open the daemon's store");
    let pending: Vec<(String, String)> = db
        .prepare("SELECT chat, text FROM outbox WHERE state = 'pending'")
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<_, _>>()
        })
        .unwrap_or_default();
    let sent = fake.sent();
    let sends = pending
        .into_iter()
        .filter(|(chat, text)| {
            sent.iter()
                .any(|s| s.chat_id.to_string() == *chat && s.text == *text)
        })
        .map(|(_, text)| text)
        .collect();
    let opens = db
        .prepare("SELECT name FROM account_state WHERE name LIKE 'telegram_stream/%' AND value LIKE '%\"m\":null%'")
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<_, _>>()
        })
        .unwrap_or_default();
    (sends, opens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_loses_nothing_and_answers_nothing_twice() {
    let started = Instant::now();
    let seed = seed();
    eprintln!("telegram kill -9: seed {seed} (SCV_KILL9_SEED replays it)");
    let mut rng = Rng(seed);
    let bed = Bed::new().await;
    let mut asked: Vec<Question> = Vec::new();
    let (mut doubt_sends, mut doubt_opens) = (BTreeSet::new(), BTreeSet::new());
    for round in 0..ROUNDS {
        // One question waits before the start, two arrive while the daemon runs.
        asked.push(bed.ask_privately(format!("r{round}p")));
        let before = bed.activity();
        let polls = bed.fake.poll_requests();
        let point = 1 + rng.below(MAX_POINT);
        let mut child = bed.spawn();
        bed.until(&format!("round {round}: polling"), || {
            bed.fake.poll_requests() > polls || bed.activity() >= before + point
        })
        .await;
        for i in 0..2 {
            let group = -1_000_000 - (round * 10 + i) as i64;
            asked.push(bed.ask_in_group(group, format!("r{round}g{i}")));
        }
        let round_done = |asked: &[Question]| {
            asked.iter().all(|q| bed.showing(q) > 0) && bed.fake.pending() == 0
        };
        bed.until(&format!("round {round}: point {point}"), || {
            bed.activity() >= before + point || round_done(&asked)
        })
        .await;
        sigkill(&mut child);
        let (sends, opens) = in_doubt(&bed.p.db(), &bed.fake);
        eprintln!(
            "round {round}: killed at point {point} (+{} seen); in doubt: {} sends, {} opened messages",
            bed.activity() - before,
            sends.len(),
            opens.len()
        );
        doubt_sends.extend(sends);
        doubt_opens.extend(opens);
    }

    let (doubt_sends, doubt_opens) = (doubt_sends.len(), doubt_opens.len());
    // A last run drains everything: every question answered or held with a note in its chat,
    // every update confirmed.
    let mut child = bed.spawn();
    let unanswered = || asked.iter().filter(|q| bed.showing(q) == 0).count();
    bed.until(
        "every answer (or its note) and every update confirmed",
        || {
            let notes = bed.notes();
            let settled = |q: &Question| bed.showing(q) > 0 || notes.contains_key(&q.chat);
            asked.iter().all(settled) && bed.fake.pending() == 0
        },
    )
    .await;
    bed.until("the outbox sent", || {
        states(&bed.p.db(), "outbox").keys().all(|s| s == "sent")
    })
    .await;
    let twice_shown = |asked: &[Question]| asked.iter().map(|q| bed.repeated(q)).sum::<usize>();
    // Twice by the bridge's own choice: before anyone asked for anything again.
    let twice = twice_shown(&asked);
    let doubled: Vec<&str> = asked
        .iter()
        .filter(|q| bed.repeated(q) > 0)
        .map(|q| q.text.as_str())
        .collect();
    let notes = bed.notes();
    let missing: BTreeSet<i64> = asked
        .iter()
        .filter(|q| bed.showing(q) == 0)
        .map(|q| q.chat)
        .collect();
    for chat in &missing {
        assert!(
            notes.contains_key(chat),
            "an answer is missing where no note says how to get it\n{}",
            bed.report()
        );
        bed.again(*chat);
    }
    bed.until("the held answers sent again", || {
        unanswered() == 0 && bed.fake.pending() == 0
    })
    .await;
    bed.until("the outbox sent", || {
        states(&bed.p.db(), "outbox").keys().all(|s| s == "sent")
    })
    .await;
    terminate(&mut child);

    let lost = asked.iter().filter(|q| bed.showing(q) == 0).count();
    let again = twice_shown(&asked).saturating_sub(twice);
    let split = asked
        .iter()
        .filter(|q| {
            let whole = answer(&q.text);
            let one = |s: &scv_telegram::fake::SentText| {
                bed.fake
                    .message(s.chat_id, s.message_id)
                    .is_some_and(|(t, _)| t == whole)
            };
            !bed.fake
                .sent()
                .iter()
                .any(|s| s.chat_id == q.chat && one(s))
        })
        .count();
    eprintln!(
        "telegram kill -9 (seed {seed}): {} questions over {} runs: {lost} lost, {twice} characters shown twice; {} notes in {} chats, /again in {} chats showed {again} characters again; {split} answers arrived split where a crash cut them; in doubt at the kills: {doubt_sends} sends, {doubt_opens} opened messages; {} sendMessage, {} drafts, {} model requests, in {:?}",
        asked.len(),
        ROUNDS + 1,
        notes.values().sum::<usize>(),
        notes.len(),
        missing.len(),
        bed.fake.sent().len(),
        bed.fake.drafts().len(),
        bed.model.requests().len(),
        started.elapsed()
    );
    assert_eq!(lost, 0, "lost answers\n{}", bed.report());
    assert_eq!(
        twice,
        0,
        "shown twice by the bridge: {doubled:?} ({doubt_sends} sends, {doubt_opens} opened messages were in doubt at the kills)\n{}",
        bed.report()
    );
    let n = asked.len() as i64;
    assert_eq!(
        states(&bed.p.db(), "inbound_journal"),
        BTreeMap::from([("done".to_string(), n)]),
        "every question journaled once and finished"
    );
}
