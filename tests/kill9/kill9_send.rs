//! `kill -9` in the middle of a WeChat send, every time: the real binary against the fake iLink
//! server, SIGKILLed once the server has a reply's `sendmessage` and before the daemon can store
//! the outcome. In some rounds the server took the reply (its answer is lost with the daemon), in
//! others it never carried the request out. The fake here accepts a reused `client_id` (whether
//! the real server drops a repeated send is unconfirmed), so a blind resend is shown twice.
//!
//! The test plays the owner: after each restart it reads the chat, and when a reply it never
//! got is announced as possibly cut off, it sends `/again`. Every reply must arrive exactly
//! once: no doubles, none lost.

use crate::process_support;
use crate::wechat_bed;

use std::time::Duration;

use process_support::bed::ProcessBed;
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeConfig, FakeHandle, FakeServer, Fault, SentMessage};

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(30);
/// Rounds whose kill lands after the server took the reply.
const TAKEN: usize = 10;
/// Rounds whose kill lands while the server holds the request it never carried out.
const NOT_TAKEN: usize = 4;

struct Bed {
    p: ProcessBed,
    fake: FakeServer,
    model: FakeOpenAi,
}

impl Bed {
    async fn new() -> Bed {
        let (p, fake, model) = wechat_bed::start(FakeConfig {
            refuse_reused_client_ids: false,
            ..FakeConfig::default()
        })
        .await;
        Bed { p, fake, model }
    }

    fn h(&self) -> FakeHandle {
        self.fake.handle()
    }

    fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    async fn wait_until(&self, what: &str, f: impl FnMut() -> bool) {
        let report = || {
            let sent: Vec<_> = self.h().sent().into_iter().map(|s| s.text).collect();
            format!("sent: {sent:?}\nlog:\n{}", self.p.log())
        };
        self.p
            .wait_until(PATIENCE, what, &[&self.fake, &self.model], report, f)
            .await;
    }

    /// What the chat with `peer` shows.
    fn chat(&self, peer: &str) -> Vec<SentMessage> {
        self.h()
            .sent()
            .into_iter()
            .filter(|s| s.to_user == peer)
            .collect()
    }
}

fn peer(round: usize) -> String {
    format!("u{round}@im.wechat")
}

fn reply(round: usize) -> String {
    format!("echo: r{round}")
}

/// After a restart, the owner of the previous round's chat reads it: once anything new shows
/// there (the held reply's note, or a resend), a reply still missing is asked for with `/again`
/// and waited for.
async fn owner_reads(bed: &Bed, round: usize, shown_before: usize) {
    let (peer, reply) = (peer(round), reply(round));
    bed.wait_until(
        &format!("round {round}: the chat hears after the restart"),
        || bed.chat(&peer).len() > shown_before,
    )
    .await;
    if bed.chat(&peer).iter().any(|s| s.text == reply) {
        return;
    }
    let note = bed.chat(&peer).pop().map(|s| s.text).unwrap_or_default();
    assert!(
        note.contains("/again"),
        "round {round}: the reply is missing and the chat was not told how to get it: {note:?}"
    );
    bed.h().push_text(&peer, "/again");
    bed.wait_until(&format!("round {round}: the reply after /again"), || {
        bed.chat(&peer).iter().any(|s| s.text == reply)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_send_shows_every_reply_exactly_once() {
    let bed = Bed::new().await;
    let fake = bed.h();
    let rounds = TAKEN + NOT_TAKEN;
    // Every fourth round or so the server never carried the request out.
    let taken = |round: usize| round * NOT_TAKEN % rounds >= NOT_TAKEN;
    assert_eq!((0..rounds).filter(|r| taken(*r)).count(), TAKEN);
    for round in 0..=rounds {
        let shown_before = round
            .checked_sub(1)
            .map_or(0, |prev| bed.chat(&peer(prev)).len());
        let mut child = bed.spawn();
        if let Some(prev) = round.checked_sub(1) {
            owner_reads(&bed, prev, shown_before).await;
        }
        if round == rounds {
            // The last run only settles the last kill.
            terminate(&mut child);
            break;
        }
        let (sends, requests) = (
            fake.sent().len(),
            fake.requests_to(Endpoint::SendMessage).len(),
        );
        let fault = if taken(round) {
            Fault::LoseAnswer
        } else {
            Fault::Hang
        };
        fake.inject(Endpoint::SendMessage, fault);
        fake.push_text(&peer(round), &format!("r{round}"));
        if taken(round) {
            bed.wait_until(&format!("round {round}: the reply taken"), || {
                fake.sent().len() > sends
            })
            .await;
        } else {
            bed.wait_until(&format!("round {round}: the reply's request held"), || {
                fake.requests_to(Endpoint::SendMessage).len() > requests
            })
            .await;
        }
        sigkill(&mut child);
        assert!(
            fake.connections_closed(PATIENCE).await,
            "round {round}: the fake never closed the dead daemon's connections\nlog:\n{}",
            bed.p.log()
        );
    }

    let shown: Vec<usize> = (0..rounds)
        .map(|r| {
            bed.chat(&peer(r))
                .iter()
                .filter(|s| s.text == reply(r))
                .count()
        })
        .collect();
    let doubles = shown.iter().filter(|n| **n > 1).count();
    let lost = shown.iter().filter(|n| **n == 0).count();
    let notes = fake
        .sent()
        .iter()
        .filter(|s| s.text.contains("/again"))
        .count();
    println!(
        "kill-on-send: {rounds} kills ({TAKEN} after the server took the reply): \
         {doubles} shown twice, {lost} lost, {notes} notes"
    );
    assert_eq!(
        (doubles, lost),
        (0, 0),
        "replies shown per round: {shown:?}\nlog:\n{}",
        bed.p.log()
    );
    assert_eq!(notes, rounds, "one note per interrupted send");
    // `/again` reached the bridge only, never the agent.
    let asked: Vec<String> = bed
        .model
        .requests()
        .iter()
        .filter_map(|r| r.messages.last().map(|m| m.content.clone()))
        .collect();
    assert!(!asked.iter().any(|a| a.contains("/again")), "{asked:?}");
}
