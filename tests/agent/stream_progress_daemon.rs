//! The progress line end to end: a running daemon with an in-memory chat account, an agent
//! that reports a tool step and then works on in silence, on a paused clock. The owner hears
//! "Still working: running tests" after 30 s, each later line only after twice the silence
//! before it, three at most, then the answer.

use crate::memory_support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AccountKey, Config};
use scv_bridge::conversation::*;
use scv_bridge::words::{Lang, Msg};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const OWNER: &str = "o9@im.wechat";

/// Reports one tool step, then works until the gate opens.
struct StepAgent {
    gate: watch::Sender<bool>,
}

impl Agent for StepAgent {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            req.events.status("running tests");
            let _ = self.gate.subscribe().wait_for(|open| *open).await;
            Ok(TurnOutput {
                text: "all green".into(),
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

#[tokio::test(start_paused = true)]
async fn a_long_silent_turn_says_it_is_still_working_throttled_then_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[wechat.phone]\n",
        dir.path().join("state").display(),
        dir.path().join("state/daemon.sock").display()
    );
    std::fs::write(&path, text).expect("config");
    let config = Config::load(Path::new(&path)).expect("config");
    let agent = Arc::new(StepAgent {
        gate: watch::channel(false).0,
    });
    let (d, factory, conv) = memory_support::start(config, OWNER, {
        let a2 = agent.clone();
        move |_| a2 as Arc<dyn Agent>
    })
    .await;

    let t0 = Instant::now();
    conv.accept(vec![Inbound {
        account: AccountKey::parse("wechat:phone").expect("account"),
        chat: ChatId::new(OWNER),
        sender: SenderId::new(OWNER),
        msg_id: PlatformMsgId::new("o1"),
        text: "run the tests".into(),
        at_unix_ms: 0,
        reply: ReplyContext::default(),
        media: Vec::new(),
    }])
    .await
    .expect("accept");
    let ch = factory.channel("wechat:phone");
    let line = Msg::StillWorking {
        doing: Some("running tests".into()),
    }
    .text(Lang::En)
    .into_owned();

    let quiet = Msg::StillWorking { doing: None }
        .text(Lang::En)
        .into_owned();

    // 30 s after the step, then 60 s after that, then 120 s: three lines at most.
    ch.wait_sent(3).await;
    assert!(
        t0.elapsed() >= Duration::from_secs(30 + 60 + 120),
        "each line waits twice the silence before it: {:?}",
        t0.elapsed()
    );
    // The step is quoted once; later lines do not repeat it.
    assert_eq!(
        ch.texts(OWNER),
        [line.clone(), quiet.clone(), quiet.clone()]
    );
    agent.gate.send_replace(true);
    ch.wait_sent(4).await;
    assert_eq!(
        ch.texts(OWNER),
        [line, quiet.clone(), quiet, "all green".into()],
        "no fourth line, then the answer"
    );
    d.stop().await;
}
