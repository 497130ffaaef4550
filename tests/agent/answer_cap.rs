//! An answer longer than `[agent] max_answer_kib` puts only its first part into the chat: each
//! backend (ACP, OpenAI streaming, SCV) keeps no more than the cap of it in memory, streams no
//! more than the cap, and writes the rest as it arrives into a file in the workspace's
//! `answers/`, which the pipeline sends after the answer as a document; the chat is told.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::agent::{
    AcpAgent, AcpOptions, Agent, OpenAiAgent, OpenAiOptions, ScvAgent, ScvOptions, SessionKey,
    Transport, TurnEvent, TurnEvents, TurnOutput, TurnRequest,
};
use scv_bridge::config::{AccountKey, AccountSpec, Channel, ChannelSettings};
use scv_bridge::conversation::*;
use scv_bridge::protocol::{Purpose, RemoteTools, Senders};
use scv_bridge::store::Store;
use scv_bridge::supervisor::{Capabilities, HealthCell, HealthHandle};
use scv_bridge::testing::fake_acp::FakeAcp;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_bridge::testing::fake_scv::FakeScv;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

const CAP: usize = 4096;
const NOTE_START: &str =
    "\n\n(The answer is longer than 4 KiB: the rest is in the workspace file answers/answer-";

fn account() -> AccountKey {
    AccountKey::new(Channel::Wechat, "phone")
}

fn req(ws: &Path, prompt: &str) -> (TurnRequest, UnboundedReceiver<TurnEvent>) {
    let (events, rx) = TurnEvents::channel();
    let r = TurnRequest {
        session: SessionKey {
            account: account(),
            chat: ChatId::new("c1"),
        },
        prompt: prompt.into(),
        no_tools: false,
        auto_approve: true,
        approver: None,
        workspace: Some(ws.to_path_buf()),
        channel_label: "WeChat",
        language: Default::default(),
        attachments: Vec::new(),
        events,
        owner_tools: None,
    };
    (r, rx)
}

fn streamed(rx: &mut UnboundedReceiver<TurnEvent>) -> String {
    std::iter::from_fn(|| rx.try_recv().ok())
        .filter_map(|e| match e {
            TurnEvent::Text(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// The answer kept `CAP` bytes of `whole` and said where the rest is; the one file holds the
/// rest, byte for byte.
fn capped(out: &TurnOutput, whole: &str, ws: &Path) {
    assert!(
        out.text.starts_with(&whole[..CAP]) && out.text[CAP..].starts_with(NOTE_START),
        "{:?}",
        &out.text[CAP.min(out.text.len())..]
    );
    assert!(out.text.len() < CAP + 200, "{} bytes", out.text.len());
    assert_eq!(out.files.len(), 1, "{:?}", out.files);
    let file = &out.files[0];
    assert!(file.starts_with(ws.join("answers")), "{}", file.display());
    assert_eq!(
        std::fs::read_to_string(file).expect("the rest"),
        whole[CAP..]
    );
}

/// What the ACP fake writes for `BIG:<n>`.
fn big(n: usize) -> String {
    let line = "0123456789".repeat(10);
    let mut s = String::new();
    while s.len() < n {
        let left = n - s.len();
        s.push_str(&line[..left.min(100)]);
        if s.len() < n {
            s.push('\n');
        }
    }
    s
}

#[tokio::test]
async fn acp_keeps_the_cap_and_writes_the_rest_to_the_workspace() {
    let ws = tempfile::tempdir().expect("ws");
    let fake = FakeAcp::new();
    let mut o = AcpOptions::new(Arc::new(fake.clone()));
    o.max_answer_bytes = CAP;
    let a = AcpAgent::new(o, None);
    let n = 2 << 20;
    let (r, mut rx) = req(ws.path(), &format!("BIG:{n}"));
    let out = a.turn(r, CancellationToken::new()).await.expect("answer");
    capped(&out, &big(n), ws.path());
    assert_eq!(
        streamed(&mut rx),
        out.text,
        "streaming stops at the cap too"
    );
}

#[tokio::test]
async fn openai_keeps_the_cap_and_writes_the_rest_to_the_workspace() {
    let ws = tempfile::tempdir().expect("ws");
    let fake = FakeOpenAi::start().await.expect("fake");
    let pieces: Vec<String> = (0..256).map(|i| format!("{:04} ", i).repeat(200)).collect();
    let whole = pieces.concat();
    fake.push(Reply::Stream {
        pieces,
        usage: Some((1, 1)),
    });
    let mut o = OpenAiOptions::new(fake.base_url(), "fake-model");
    o.max_answer_bytes = CAP;
    let (store, _guard) = Store::open_in_memory().expect("store");
    let a = OpenAiAgent::new(o, store).expect("agent");
    let (r, mut rx) = req(ws.path(), "tell me everything");
    let out = a.turn(r, CancellationToken::new()).await.expect("answer");
    capped(&out, &whole, ws.path());
    assert_eq!(streamed(&mut rx), out.text);
}

#[tokio::test]
async fn scv_keeps_the_cap_and_writes_the_rest_to_the_workspace() {
    let ws = tempfile::tempdir().expect("ws");
    let dir = tempfile::tempdir().expect("dir");
    let fake = FakeScv::start(&dir.path().join("agent.sock"))
        .await
        .expect("fake");
    let mut o = ScvOptions::new(Transport::Socket(fake.path().into()));
    o.max_answer_bytes = CAP;
    o.turn_timeout = Some(Duration::from_secs(20));
    let a = ScvAgent::new(o);
    // The fake answers `echo: <prompt>`.
    let prompt = "word ".repeat(4000);
    let (r, _rx) = req(ws.path(), &prompt);
    let out = a.turn(r, CancellationToken::new()).await.expect("answer");
    capped(&out, &format!("echo: {prompt}"), ws.path());
    // The deltas it also sent were dropped with their file: one file, the completed text's.
    let kept: Vec<PathBuf> = std::fs::read_dir(ws.path().join("answers"))
        .expect("answers")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(kept, out.files);
}

#[tokio::test]
async fn the_chat_gets_the_capped_answer_then_the_rest_as_a_document() {
    let ws = tempfile::tempdir().expect("ws");
    let dir = tempfile::tempdir().expect("dir");
    let (store, _guard) = Store::open(&dir.path().join("s.db")).expect("store");
    let fake = FakeAcp::new();
    let mut o = AcpOptions::new(Arc::new(fake.clone()));
    o.max_answer_bytes = CAP;
    let conv = Conversation::new(store, Arc::new(AcpAgent::new(o, None)));
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let spec = AccountSpec {
        key: account(),
        enabled: true,
        workspace: Some(ws.path().to_path_buf()),
        senders: Senders::Owner,
        remote_tools: RemoteTools::Owner,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        language: Default::default(),
        media: Default::default(),
        settings: ChannelSettings::default(),
    };
    let link = AccountLink {
        account: account(),
        senders: Senders::Owner,
        remote_tools: RemoteTools::Owner,
        approvals: Default::default(),
        purpose: Purpose::Chat,
        owner: Some(SenderId::new("owner")),
        workspace: Some(ws.path().to_path_buf()),
        media: Default::default(),
        channel_label: "WeChat",
        language: Default::default(),
        capabilities: Capabilities::default(),
        health: HealthHandle::new(HealthCell::new(&spec)),
        sender: channel.clone(),
    };
    let _attached = conv.attach(link);
    let n = 1 << 20;
    conv.accept(vec![Inbound {
        account: account(),
        chat: ChatId::new("owner"),
        sender: SenderId::new("owner"),
        msg_id: PlatformMsgId::new("m1"),
        text: format!("BIG:{n}"),
        at_unix_ms: 1,
        reply: ReplyContext("ctx".into()),
        media: Vec::new(),
    }])
    .await
    .expect("accept");
    conv.quiescent().await;
    let sent = channel.sent();
    let texts: String = sent
        .iter()
        .filter(|o| !matches!(o.body, Body::Media(_)))
        .map(|o| o.text.clone())
        .collect::<Vec<_>>()
        .join("");
    assert!(
        texts.len() < CAP + 400,
        "the chat got {} bytes",
        texts.len()
    );
    assert!(
        texts.contains("the rest is in the workspace file answers/answer-"),
        "{texts}"
    );
    let docs: Vec<_> = sent
        .iter()
        .filter_map(|o| match &o.body {
            Body::Media(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(docs.len(), 1, "{sent:?}");
    assert!(docs[0].name.starts_with("answer-") && docs[0].name.ends_with(".md"));
    assert_eq!(
        std::fs::metadata(&docs[0].path).expect("file").len() as usize,
        n - CAP
    );
}
