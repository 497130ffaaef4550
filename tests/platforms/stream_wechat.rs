//! Streaming on WeChat against the fake iLink server: finished parts of a long answer go out
//! while the model still writes, and a restart mid-answer loses and repeats nothing.

use crate::wechat_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::future::BoxFuture;
use scv_bridge::agent::{Agent, AgentError, AgentErrorKind, SessionKey, TurnOutput, TurnRequest};
use scv_wechat::fake::FakeConfig;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use wechat_support::*;

/// Paragraphs in the answer; each is [`long_answer`]'s 300 characters.
const PARAGRAPHS: usize = 10;

/// An agent that writes [`long_answer`] paragraph by paragraph through the turn's events and,
/// on its first run, stops after `hold_after` paragraphs until the test lets it go on (or the
/// turn is cancelled).
struct StreamingAgent {
    hold_after: usize,
    /// Permits to finish a held run.
    go_on: Semaphore,
    /// Whether the first run is allowed to finish at all (false: it is held until cancelled).
    first_may_finish: bool,
    runs: AtomicUsize,
    finished: AtomicUsize,
}

impl StreamingAgent {
    fn new(hold_after: usize, first_may_finish: bool) -> Arc<Self> {
        Arc::new(StreamingAgent {
            hold_after,
            go_on: Semaphore::new(0),
            first_may_finish,
            runs: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
        })
    }
}

impl Agent for StreamingAgent {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let answer = long_answer(PARAGRAPHS);
            let paragraphs: Vec<&str> = answer.split("\n\n").collect();
            for (i, p) in paragraphs.iter().enumerate() {
                if run == 0 && i == self.hold_after {
                    let cancelled =
                        || AgentError::new(AgentErrorKind::Cancelled, "the turn was cancelled");
                    if !self.first_may_finish {
                        cancel.cancelled().await;
                        return Err(cancelled());
                    }
                    tokio::select! {
                        _ = self.go_on.acquire() => {}
                        _ = cancel.cancelled() => return Err(cancelled()),
                    }
                }
                if i > 0 {
                    req.events.text("\n\n");
                }
                req.events.text(p);
            }
            self.finished.fetch_add(1, Ordering::SeqCst);
            Ok(TurnOutput {
                text: answer,
                usage: None,
                files: Vec::new(),
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// How often each paragraph tag (`[p003]`) appears in `sent`, in tag order.
fn tag_counts(sent: &[String]) -> Vec<usize> {
    let all = sent.concat();
    (0..PARAGRAPHS)
        .map(|i| all.matches(&format!("[p{i:03}]")).count())
        .collect()
}

fn non_blank(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

#[tokio::test]
async fn the_first_part_of_a_long_answer_arrives_before_the_model_finishes() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    let agent = StreamingAgent::new(3, true);
    h.agent_override = Some(agent.clone());
    h.start().await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "write a lot");

    // The model is held after three paragraphs: whatever arrives now was streamed.
    let early = h.wait_sent(1).await;
    assert_eq!(agent.finished.load(Ordering::SeqCst), 0, "still writing");
    assert!(early[0].starts_with("[p000]"), "{}", early[0]);
    assert!(
        early[0].chars().count() <= 2000,
        "within WeChat's size limit"
    );

    agent.go_on.add_permits(1);
    h.settle().await;
    let sent: Vec<String> = fake.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(tag_counts(&sent), vec![1; PARAGRAPHS], "{sent:?}");
    assert_eq!(
        non_blank(&sent.concat()),
        non_blank(&long_answer(PARAGRAPHS))
    );
    // 3,000 characters in near-full messages, not one send per paragraph.
    assert!(sent.len() <= 4, "{} sends: {sent:?}", sent.len());
    assert!(sent.iter().all(|s| s.chars().count() <= 2000));
    h.stop().await;
}

#[tokio::test]
async fn a_restart_mid_answer_loses_nothing_and_repeats_nothing() {
    let mut h = Harness::new(FakeConfig::default(), "").await;
    // The first run writes eight paragraphs and then never finishes: the daemon goes down.
    let agent = StreamingAgent::new(8, false);
    h.agent_override = Some(agent.clone());
    h.start().await;
    let fake = h.fake.handle();
    fake.push_text(OWNER, "write a lot");
    // The first paragraph, then paragraphs 1–6 as one near-full message, are out.
    let early: Vec<String> = fake
        .wait_for_sent(2, PATIENCE)
        .await
        .into_iter()
        .map(|m| m.text)
        .collect();
    assert_eq!(tag_counts(&early)[..7], [1; 7], "{early:?}");
    h.stop().await;
    assert_eq!(agent.finished.load(Ordering::SeqCst), 0);

    // The message was never answered: the restart runs the turn again, which skips what the
    // first run already queued.
    h.start().await;
    h.wait_sent(3).await;
    h.settle().await;
    assert_eq!(agent.runs.load(Ordering::SeqCst), 2);
    let sent: Vec<String> = fake.sent().into_iter().map(|m| m.text).collect();
    assert_eq!(tag_counts(&sent), vec![1; PARAGRAPHS], "{sent:?}");
    assert_eq!(
        non_blank(&sent.concat()),
        non_blank(&long_answer(PARAGRAPHS))
    );
    h.stop().await;
}
