//! Fakes for tests; configuration can never select them.
//!
//! - A scriptable fake component and factory (this module).
//! - [`fake_openai`]: an OpenAI-compatible chat completions server on loopback.
//! - [`fake_scv`]: an SCV agent server on a Unix socket.
//! - [`fake_speech`]: an OpenAI-compatible speech server (transcription and speech) on loopback.
//! - [`connections`]: a listener for the fakes that counts the connections still open.
//! - [`agents`]: an agent that answers at once, and a turn request with the usual defaults.
//! - [`wechat`]: the WeChat adapter with test timings, and photos on the fake iLink CDN.
//! - [`platform_bed`]: one platform account on the real daemon, for each platform's tests.
//! - [`process`]: the real binary under an open-file limit.
//! - [`status`]: a running daemon's status over its control socket.
//!
//! What both the tests and the benches use lives here (benches cannot include `tests/`); what
//! only one test binary uses stays in that binary's folder under `tests/`.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub mod agents;
pub mod connections;
pub mod fake_acp;
pub mod fake_models;
pub mod fake_openai;
pub mod fake_scv;
pub mod fake_speech;
pub mod platform_bed;
pub mod process;
pub mod status;
pub mod wechat;

pub use agents::{InstantAgent, PacedAgent, turn_request};
pub use status::daemon_status;
pub use wechat::WechatFactory;

use crate::config::{AccountKey, AccountSpec};
use crate::protocol::ComponentState;
use crate::supervisor::{
    Component, ComponentError, ComponentFactory, HealthHandle, HealthRegistry,
};

/// Lets `d` of paused tokio time pass, driven in 10 ms steps with `tokio::time::advance`
/// (tests that pause the clock). One long jump would skip the attempts a backoff really makes
/// while the runtime waits on the store's writer thread (which tokio cannot see); small steps
/// fire each timer near its own moment, so the count of attempts stays honest.
pub async fn let_time_pass(d: Duration) {
    let end = tokio::time::Instant::now() + d;
    while tokio::time::Instant::now() < end {
        tokio::time::advance(Duration::from_millis(10)).await;
    }
}

/// Waits (on change notifications, not a timer) until account `id` is in `state`.
pub async fn wait_for_state(registry: &HealthRegistry, id: &str, state: ComponentState) {
    let mut members = registry.subscribe();
    loop {
        members.borrow_and_update();
        let cell = registry.cell(id);
        let mut rx = cell.as_ref().map(|c| c.subscribe());
        if cell.as_ref().is_some_and(|c| c.get().state == state) {
            return;
        }
        tokio::select! {
            _ = members.changed() => {}
            _ = async {
                match rx.as_mut() {
                    Some(rx) => { let _ = rx.changed().await; }
                    None => std::future::pending::<()>().await,
                }
            } => {}
        }
    }
}

/// What one run of a [`FakeComponent`] does.
#[derive(Debug, Clone)]
pub enum Step {
    /// Report connected and run until cancelled.
    Connect,
    /// Fail at once with this error.
    Fail(ComponentError),
    /// Report connected, run this long, then fail with this error.
    ConnectThenFail(Duration, ComponentError),
    /// Panic at once.
    Panic,
    /// Report connected, then ignore cancellation forever.
    HangOnStop,
}

/// A component that follows a script, one step per run, then its default step.
pub struct FakeComponent {
    script: Mutex<VecDeque<Step>>,
    default: Step,
    runs: watch::Sender<u32>,
}

impl FakeComponent {
    /// A component that runs `script`, then `Connect` forever.
    pub fn new(script: impl IntoIterator<Item = Step>) -> Arc<Self> {
        Arc::new(FakeComponent {
            script: Mutex::new(script.into_iter().collect()),
            default: Step::Connect,
            runs: watch::channel(0).0,
        })
    }

    /// Appends steps to the script.
    pub fn push(&self, steps: impl IntoIterator<Item = Step>) {
        if let Ok(mut s) = self.script.lock() {
            s.extend(steps);
        }
    }

    /// How many times `run` has been called.
    pub fn runs(&self) -> u32 {
        *self.runs.borrow()
    }

    /// Waits until `run` has been called at least `n` times.
    pub async fn wait_runs(&self, n: u32) {
        let mut rx = self.runs.subscribe();
        let _ = rx.wait_for(|r| *r >= n).await;
    }

    fn next_step(&self) -> Step {
        self.script
            .lock()
            .ok()
            .and_then(|mut s| s.pop_front())
            .unwrap_or_else(|| self.default.clone())
    }
}

impl Component for FakeComponent {
    fn run(
        self: Arc<Self>,
        health: HealthHandle,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<(), ComponentError>> {
        let step = self.next_step();
        self.runs.send_modify(|r| *r += 1);
        async move {
            match step {
                Step::Connect => {
                    health.connected();
                    cancel.cancelled().await;
                    Ok(())
                }
                Step::Fail(e) => Err(e),
                Step::ConnectThenFail(after, e) => {
                    health.connected();
                    tokio::select! {
                        _ = tokio::time::sleep(after) => Err(e),
                        _ = cancel.cancelled() => Ok(()),
                    }
                }
                Step::Panic => panic!("scripted panic"),
                Step::HangOnStop => {
                    health.connected();
                    std::future::pending::<()>().await;
                    Ok(())
                }
            }
        }
        .boxed()
    }
}

/// Hands out one [`FakeComponent`] per account (created on first use, kept across restarts).
#[derive(Default)]
pub struct FakeFactory {
    components: Mutex<BTreeMap<AccountKey, Arc<FakeComponent>>>,
    builds: Mutex<BTreeMap<AccountKey, u32>>,
}

impl FakeFactory {
    /// An empty factory; every account connects unless scripted otherwise.
    pub fn new() -> Arc<Self> {
        Arc::new(FakeFactory::default())
    }

    /// The account's component, created with an empty script if needed.
    pub fn component(&self, key: &AccountKey) -> Arc<FakeComponent> {
        let mut map = match self.components.lock() {
            Ok(m) => m,
            Err(p) => p.into_inner(),
        };
        map.entry(key.clone())
            .or_insert_with(|| FakeComponent::new([]))
            .clone()
    }

    /// Scripts the account's next runs.
    pub fn script(&self, key: &AccountKey, steps: impl IntoIterator<Item = Step>) {
        self.component(key).push(steps);
    }

    /// How many times the account's component was built (once per start or restart by reconcile).
    pub fn builds(&self, key: &AccountKey) -> u32 {
        self.builds
            .lock()
            .map(|b| b.get(key).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

impl ComponentFactory for FakeFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        if let Ok(mut b) = self.builds.lock() {
            *b.entry(spec.key.clone()).or_insert(0) += 1;
        }
        self.component(&spec.key)
    }
}
