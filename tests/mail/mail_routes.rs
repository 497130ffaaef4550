//! Digests take the owner's first route that can deliver now, as `send` does: with `[owner]
//! routes = [wechat:chat, feishu:work]` and WeChat waiting on a closed window, the digest goes
//! straight to Feishu (not to WeChat to wait and move), and is counted through the outbox's
//! delivery states. Real Dovecot, the daemon and its control socket, memory chats, the manual
//! clock.

use crate::support_mail;

use std::time::Duration;

use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::client;
use scv_bridge::config::{AccountKey, CredentialsMode};
use scv_bridge::conversation::{AccountLink, SendError};
use scv_bridge::failure::general;
use scv_bridge::ids::SenderId;
use scv_bridge::protocol::{ComponentState, DaemonCommand, Purpose, RemoteTools, Senders};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::HealthHandle;
use support_mail::{CHAT, Harness, OWNER};

const FEISHU: &str = "feishu:work";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_takes_the_first_route_that_can_deliver_now() {
    // Moves and alerts far off: only the digest's own choice is looked at.
    let mut h = Harness::new(
        "\n[feishu.work]\n[owner]\nroutes = [\"wechat:chat\", \"feishu:work\"]\n\
         move_after_seconds = 86400\nalert_after_seconds = 86400\n",
    )
    .await;
    h.with_confirm = true;
    // An ordinary chat (a mail-report chat takes no `send`), as `mail_shared_chat`'s.
    h.chat_purpose = Purpose::Chat;
    CredentialStore::open(CredentialsMode::File, &h.state_dir().join("state"))
        .expect("credentials")
        .save(FEISHU, &Credentials::default().with("owner_id", OWNER))
        .expect("save");
    h.start().await;
    h.wait_health(10, "connected", |x| x.state == ComponentState::Connected)
        .await;
    let d = h.daemon.as_ref().expect("running");
    let conv = h.conv.clone().expect("conversation");
    let feishu = MemoryChannel::new(4000, Duration::ZERO);
    let cell = d.core.registry().cell(FEISHU).expect("feishu cell");
    let _feishu = conv.attach(AccountLink {
        account: AccountKey::parse(FEISHU).expect("key"),
        senders: Senders::Owner,
        remote_tools: RemoteTools::None,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        owner: Some(SenderId::new(OWNER)),
        workspace: None,
        media: Default::default(),
        channel_label: "Feishu",
        language: Default::default(),
        capabilities: Default::default(),
        health: HealthHandle::new(cell),
        sender: feishu.clone(),
    });

    // WeChat's window closes on a message for the owner there: it waits.
    h.chat.fail_next([SendError::window_closed(
        general::MESSAGE_EMPTY,
        "the chat's send window is closed",
    )]);
    let sent = client::request(
        &d.socket,
        DaemonCommand::Send {
            text: "ping".into(),
            to: Some(CHAT.into()),
            at: None,
            in_seconds: None,
            files: Vec::new(),
        },
    )
    .await
    .expect("send");
    assert_eq!(sent.send.expect("send").route, CHAT);
    tokio::time::timeout(Duration::from_secs(10), conv.quiescent())
        .await
        .expect("quiescent");
    assert!(conv.outbox().waiting_accounts().contains(CHAT));

    h.mail("Fig-Subject", "Can you come?").await;
    h.wait_health(10, "reported", |x| {
        x.mail.as_ref().is_some_and(|m| m.reported_today == 1)
    })
    .await;
    h.clock.advance(Duration::from_secs(61 * 60));
    tokio::time::timeout(Duration::from_secs(10), feishu.wait_sent(1))
        .await
        .expect("the digest on Feishu");
    let got = feishu.texts(OWNER);
    assert!(
        got[0].starts_with("Mail digest (box): 1 new") && got[0].contains("Fig-Subject"),
        "{got:?}"
    );
    assert!(h.chat.sent().is_empty(), "nothing went to WeChat");
    // Through the same states: the outbox counts it sent (and the ping still waiting).
    tokio::time::timeout(Duration::from_secs(10), conv.quiescent())
        .await
        .expect("quiescent");
    let s = client::request(&d.socket, DaemonCommand::Status)
        .await
        .expect("status");
    let deliveries = s.deliveries.expect("deliveries");
    assert_eq!(
        (deliveries.sent, deliveries.waiting),
        (1, 1),
        "{deliveries:?}"
    );
    h.stop().await;
}
