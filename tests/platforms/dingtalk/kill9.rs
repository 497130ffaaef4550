//! `kill -9` of the real binary on the DingTalk path: a message journaled and ACKed is never
//! lost, and its answer goes once. The real binary with the real DingTalk adapter and the
//! OpenAI backend, against the DingTalk and model fakes over real sockets.
//!
//! What it cannot show is the platform's own gap: robot messages are not pushed again (spec
//! §1.6), so a push read but not yet journaled when the process dies is lost; the window is
//! the push-to-ACK time `intake::every_push_is_acked_within_the_target_after_its_commit`
//! measures. And robot sends carry no idempotency key, so a kill between DingTalk taking a
//! reply and the outbox marking it sends that reply again at the next start.

use std::collections::BTreeMap;
use std::time::Duration;

use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_dingtalk::fake::FakeDingTalk;

use super::support::*;
use crate::process_support::bed::{ProcessBed, openai_agent, states};
use crate::process_support::{sigkill, terminate};

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(20);

async fn until(
    fake: &FakeDingTalk,
    bed: &ProcessBed,
    what: &str,
    f: impl Fn(&FakeDingTalk) -> bool,
) {
    assert!(
        fake.wait_until(PATIENCE, f).await,
        "timed out waiting for {what}; sent {:?}\nlog:\n{}",
        fake.sent().iter().map(text_of).collect::<Vec<_>>(),
        bed.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_after_the_ack_loses_nothing_and_answers_once() {
    let fake = FakeDingTalk::start(fake_config()).await.expect("fake");
    let model = FakeOpenAi::start().await.expect("fake model");
    let owner = fake.config().staff[0].clone();
    let bed = ProcessBed::new(
        |_| {
            format!(
                "{}[dingtalk.team]\napi_base = \"{base}\"\noapi_base = \"{base}\"\nsenders = \"owner\"\nowner = \"{owner}\"\n",
                openai_agent(&model.base_url(), "m", "SCV_KILL9_DINGTALK_KEY"),
                base = fake.base_url(),
            )
        },
        &[("SCV_KILL9_DINGTALK_KEY", "k")],
    );
    bed.save_login("dingtalk:team", &login(fake.config()));

    for round in 0..3 {
        // The model holds every request, so each question of the round is journaled and ACKed
        // but none is answered when the process dies.
        model.answer_only(Some(0));
        let conns = fake.connections().len();
        let mut child = bed.spawn();
        until(&fake, &bed, "a socket taking pushes", |f| {
            f.connections().len() > conns && f.deliverable_connections() == 1
        })
        .await;
        let pushes: Vec<_> = (0..3)
            .map(|i| fake.push_text(&owner, &format!("r{round}m{i}")))
            .collect();
        until(&fake, &bed, "every push ACKed", |f| {
            let acks = f.acks();
            pushes
                .iter()
                .all(|p| acks.iter().any(|a| a.message_id == p.push.message_id))
        })
        .await;
        sigkill(&mut child);
        until(&fake, &bed, "the dead socket noticed", |f| {
            f.live_connections() == 0
        })
        .await;
    }
    assert!(
        fake.sent().is_empty(),
        "nothing answered before the last run"
    );

    // A last run answers everything from the journal, with no push again.
    model.answer_only(None);
    let pushes = fake.pushes().len();
    let mut child = bed.spawn();
    until(&fake, &bed, "every answer", |f| f.sent().len() >= 9).await;
    terminate(&mut child);
    assert_eq!(fake.pushes().len(), pushes, "nothing was pushed again");
    // Nothing is left that a later run would still send: all journaled once, all finished.
    assert_eq!(
        states(&bed.db(), "inbound_journal"),
        BTreeMap::from([("done".to_string(), 9)]),
        "the journal"
    );
    assert_eq!(
        states(&bed.db(), "outbox"),
        BTreeMap::from([("sent".to_string(), 9)]),
        "the outbox"
    );
    let mut texts: Vec<String> = fake.sent().iter().map(text_of).collect();
    texts.sort();
    let mut want: Vec<String> = (0..3)
        .flat_map(|r| (0..3).map(move |i| format!("echo: r{r}m{i}")))
        .collect();
    want.sort();
    assert_eq!(texts, want, "each question answered once");
}
