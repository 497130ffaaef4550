//! The quiescence barrier ([`Conversation::quiescent`]): it resolves only once every turn and
//! every piece of its answer is done, and counts a chat waiting out a closed window as parked.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AccountKey, AccountSpec, Channel, ChannelSettings};
use scv_bridge::conversation::*;
use scv_bridge::ids::DeliveryState;
use scv_bridge::protocol::{Purpose, RemoteTools, Senders};
use scv_bridge::store::{Store, StoreGuard};
use scv_bridge::supervisor::{Capabilities, HealthCell, HealthHandle};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

const OWNER: &str = "wxid_owner";
/// The pause between two sends. Real time: a paused clock would jump over the store's blocking
/// calls; the pace only has to be long against one poll of the barrier after a piece is seen.
const PACE: Duration = Duration::from_millis(250);
/// The in-memory chat's message size.
const MAX: usize = 20;
/// The answer every turn gives: long enough to go out in several pieces of [`MAX`] characters.
const ANSWER: &str = "The first part. The second part. The third part.";

/// An agent that holds every turn until released, then answers [`ANSWER`].
struct GatedAgent {
    open: watch::Sender<bool>,
    started: watch::Sender<usize>,
}

impl Agent for GatedAgent {
    fn turn(
        &self,
        _req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            self.started.send_modify(|n| *n += 1);
            let _ = self.open.subscribe().wait_for(|o| *o).await;
            Ok(TurnOutput {
                text: ANSWER.to_string(),
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

fn account() -> AccountKey {
    AccountKey::new(Channel::Wechat, "phone")
}

fn link(sender: Arc<dyn ChatSender>) -> AccountLink {
    let spec = AccountSpec {
        key: account(),
        enabled: true,
        workspace: None,
        senders: Senders::Owner,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        language: Default::default(),
        media: Default::default(),
        settings: ChannelSettings::default(),
    };
    AccountLink {
        account: account(),
        senders: Senders::Owner,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        owner: Some(SenderId::new(OWNER)),
        workspace: None,
        media: Default::default(),
        channel_label: "WeChat",
        language: Default::default(),
        capabilities: Capabilities::default(),
        health: HealthHandle::new(HealthCell::new(&spec)),
        sender,
    }
}

fn msg(id: &str, text: &str) -> Inbound {
    Inbound {
        account: account(),
        chat: ChatId::new(OWNER),
        sender: SenderId::new(OWNER),
        msg_id: PlatformMsgId::new(id),
        text: text.to_string(),
        at_unix_ms: 1,
        reply: ReplyContext(format!("ctx-{id}")),
        media: Vec::new(),
    }
}

struct Setup {
    conv: Arc<Conversation>,
    channel: Arc<MemoryChannel>,
    agent: Arc<GatedAgent>,
    _attachment: Attachment,
    _dir: tempfile::TempDir,
    _guard: StoreGuard,
}

/// A pipeline over an in-memory chat that sends [`MAX`] characters at a time, paced by [`PACE`].
fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, guard) = Store::open(&dir.path().join("s.db")).expect("store");
    let agent = Arc::new(GatedAgent {
        open: watch::channel(false).0,
        started: watch::channel(0).0,
    });
    let conv = Conversation::new(store, agent.clone());
    let channel = MemoryChannel::new(MAX, PACE);
    let attachment = conv.attach(link(channel.clone()));
    Setup {
        conv,
        channel,
        agent,
        _attachment: attachment,
        _dir: dir,
        _guard: guard,
    }
}

/// A platform whose sends hang until opened, as a slow network would.
struct HeldSender {
    open: watch::Sender<bool>,
    started: watch::Sender<usize>,
    sent: std::sync::Mutex<Vec<String>>,
}

impl ChatSender for HeldSender {
    fn limits(&self) -> SendLimits {
        SendLimits {
            max_chars: 2000,
            min_interval: Duration::ZERO,
        }
    }

    fn send<'a>(&'a self, msg: &'a Outbound) -> BoxFuture<'a, Result<Sent, SendError>> {
        Box::pin(async move {
            self.started.send_modify(|n| *n += 1);
            let _ = self.open.subscribe().wait_for(|o| *o).await;
            self.sent.lock().expect("lock").push(msg.text.clone());
            Ok(Sent::default())
        })
    }
}

/// Whether the barrier is down right now (one poll; it never waits).
fn quiet_now(conv: &Conversation) -> bool {
    conv.quiescent().now_or_never().is_some()
}

/// Awaits the barrier, failing the test if it never resolves.
async fn quiescent(conv: &Conversation) {
    tokio::time::timeout(Duration::from_secs(10), conv.quiescent())
        .await
        .expect("the pipeline went quiet");
}

#[tokio::test]
async fn the_barrier_waits_for_the_turn_and_every_piece_of_its_answer() {
    let s = setup();
    quiescent(&s.conv).await;
    let pieces = split(ANSWER, MAX);
    assert_eq!(pieces.len(), 3, "{pieces:?}");

    s.conv
        .accept(vec![msg("m1", "hello")])
        .await
        .expect("accept");
    // Stored and not yet picked up: the wake-up alone holds the barrier.
    assert!(!quiet_now(&s.conv), "a stored message is work to do");
    let _ = s.agent.started.subscribe().wait_for(|n| *n == 1).await;
    assert!(!quiet_now(&s.conv), "a turn is running");

    s.agent.open.send_replace(true);
    s.channel.wait_sent(1).await;
    assert!(
        !quiet_now(&s.conv),
        "the rest of the answer waits for the pace; it is still being sent"
    );
    quiescent(&s.conv).await;
    assert_eq!(s.channel.texts(OWNER), pieces, "every piece went out first");
    assert_eq!(
        s.conv
            .delivery_state(&format!("{}/m1", account()))
            .await
            .expect("state"),
        Some(DeliveryState::Sent),
        "marked sent before the barrier went down"
    );
    assert!(quiet_now(&s.conv), "and it stays down");

    // A second message to the now parked chat: its wake-up holds the barrier until it is seen,
    // then the running turn does (both workers were parked, so nothing else can).
    s.agent.open.send_replace(false);
    s.conv
        .accept(vec![msg("m2", "again")])
        .await
        .expect("accept");
    assert!(
        !quiet_now(&s.conv),
        "a message for a parked chat is work to do"
    );
    let _ = s.agent.started.subscribe().wait_for(|n| *n == 2).await;
    assert!(!quiet_now(&s.conv), "the second turn is running");
    s.agent.open.send_replace(true);
    quiescent(&s.conv).await;
    assert_eq!(s.channel.texts(OWNER).len(), 2 * pieces.len());
}

#[tokio::test]
async fn a_chat_waiting_for_a_closed_window_counts_as_parked() {
    let s = setup();
    s.agent.open.send_replace(true);
    let closed = "the peer must write first";
    s.channel.fail_next([SendError::window_closed(
        scv_bridge::failure::Code::new("test.window_closed"),
        closed,
    )]);
    s.conv
        .send_proactive(&account(), &ChatId::new(OWNER), "digest", None, "digest-1")
        .await
        .expect("queue");
    quiescent(&s.conv).await;
    assert!(s.channel.sent().is_empty());
    assert_eq!(
        s.conv.delivery_state("digest-1").await.expect("state"),
        Some(DeliveryState::Pending),
        "the digest waits for the window"
    );
    // The peer writes: the window reopens, and the barrier waits for the digest and the answer.
    s.conv.accept(vec![msg("m1", "hi")]).await.expect("accept");
    assert!(!quiet_now(&s.conv), "the peer's message is work to do");
    quiescent(&s.conv).await;
    let texts = s.channel.texts(OWNER);
    assert_eq!(texts[0], "digest", "{texts:?}");
    assert_eq!(texts[1..], split(ANSWER, MAX)[..]);
    assert_eq!(
        s.conv.delivery_state("digest-1").await.expect("state"),
        Some(DeliveryState::Sent)
    );
}

#[tokio::test]
async fn the_barrier_stays_up_while_a_send_is_in_flight() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (store, _guard) = Store::open(&dir.path().join("s.db")).expect("store");
    let agent = Arc::new(GatedAgent {
        open: watch::channel(true).0,
        started: watch::channel(0).0,
    });
    let conv = Conversation::new(store, agent);
    let sender = Arc::new(HeldSender {
        open: watch::channel(true).0,
        started: watch::channel(0).0,
        sent: Default::default(),
    });
    let _attachment = conv.attach(link(sender.clone()));
    // First the chat's workers exist and are parked.
    conv.accept(vec![msg("m1", "hello")]).await.expect("accept");
    quiescent(&conv).await;
    assert_eq!(*sender.sent.lock().expect("lock"), [ANSWER]);

    // Then a send that hangs at the platform: only the sender is busy, and that holds.
    sender.open.send_replace(false);
    conv.send_proactive(&account(), &ChatId::new(OWNER), "digest", None, "digest-1")
        .await
        .expect("queue");
    let _ = sender.started.subscribe().wait_for(|n| *n == 2).await;
    assert!(
        !quiet_now(&conv),
        "the digest is on its way to the platform"
    );
    sender.open.send_replace(true);
    quiescent(&conv).await;
    assert_eq!(*sender.sent.lock().expect("lock"), [ANSWER, "digest"]);
    assert_eq!(
        conv.delivery_state("digest-1").await.expect("state"),
        Some(DeliveryState::Sent),
        "marked sent before the barrier went down"
    );
}
