//! One platform account on the real daemon, built by the real platform registry, for each
//! platform's end-to-end tests (`tests/platforms/<platform>/support.rs` adds only its fake, its
//! stored login and its table): the scripted agent, the recorded button presses, the
//! configuration file, and the waits on the account's health and the pipeline.
//!
//! Each platform's harness used to carry its own copy of all of this; what stays in its folder
//! is what only that platform has.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::adapters::PlatformParts;
use crate::agent::{
    Agent, AgentError, AgentErrorKind, Attachment, SessionKey, TurnOutput, TurnRequest,
};
use crate::clock::Clock;
use crate::config::{AccountSpec, Config};
use crate::conversation::{ButtonAnswers, ButtonPress, Conversation, PressOutcome};
use crate::daemon::{self, RunningDaemon};
use crate::port::Ports;
use crate::protocol::{ComponentHealth, ComponentState};
use crate::secrets::CredentialStore;
use crate::store::Store;
use crate::supervisor::{Component, ComponentFactory, LifecyclePolicy};

/// Upper bound of any wait; passing tests finish far sooner.
pub const WAIT: Duration = Duration::from_secs(20);

/// An agent that answers `answer(prompt)` and records what it was asked; it can hold every turn
/// until the test opens its gate, or stream the answer in parts the test lets through.
pub struct ScriptedAgent {
    gate: watch::Sender<bool>,
    turns: watch::Sender<usize>,
    answer: Box<dyn Fn(&str) -> String + Send + Sync>,
    /// Streams the answer in this many parts, each written when the test calls `next_part`
    /// (0: the whole answer at once, no events).
    parts: usize,
    go: tokio::sync::Semaphore,
    /// Every prompt, in order.
    pub prompts: Mutex<Vec<String>>,
    /// Every attachment handed over, in order.
    pub attachments: Mutex<Vec<Attachment>>,
}

impl ScriptedAgent {
    /// Answers "echo: <prompt>" at once.
    pub fn echo() -> Arc<Self> {
        Self::answering(|p| format!("echo: {p}"))
    }

    /// Answers with `answer(prompt)` at once.
    pub fn answering(answer: impl Fn(&str) -> String + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(ScriptedAgent {
            gate: watch::channel(true).0,
            turns: watch::channel(0).0,
            answer: Box::new(answer),
            parts: 0,
            go: tokio::sync::Semaphore::new(0),
            prompts: Mutex::default(),
            attachments: Mutex::default(),
        })
    }

    /// Writes `text` as streamed events in `parts` parts, each when `next_part` lets it, and
    /// ends the turn at one more `next_part`.
    pub fn streaming(text: String, parts: usize) -> Arc<Self> {
        let mut agent = Self::answering(move |_| text.clone());
        if let Some(a) = Arc::get_mut(&mut agent) {
            a.parts = parts;
        }
        agent
    }

    /// Lets a streaming agent write its next part (or end its turn).
    pub fn next_part(&self) {
        self.go.add_permits(1);
    }

    /// Turns started so far.
    pub fn turns(&self) -> usize {
        *self.turns.borrow()
    }

    /// Every prompt, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.prompts.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Waits for the test's go (or the turn's cancel) before a part or the answer.
    async fn step(&self, cancel: &CancellationToken) -> Result<(), AgentError> {
        tokio::select! {
            p = self.go.acquire() => {
                p.map(|p| p.forget()).unwrap_or(());
                Ok(())
            }
            _ = cancel.cancelled() => Err(cancelled()),
        }
    }
}

fn cancelled() -> AgentError {
    AgentError::new(AgentErrorKind::Cancelled, "cancelled")
}

impl Agent for ScriptedAgent {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            self.turns.send_modify(|t| *t += 1);
            if let Ok(mut p) = self.prompts.lock() {
                p.push(req.prompt.clone());
            }
            if let Ok(mut a) = self.attachments.lock() {
                a.extend(req.attachments.iter().cloned());
            }
            let mut gate = self.gate.subscribe();
            tokio::select! {
                _ = gate.wait_for(|open| *open) => {}
                _ = cancel.cancelled() => return Err(cancelled()),
            }
            let text = (self.answer)(&req.prompt);
            if self.parts > 0 {
                let chars: Vec<char> = text.chars().collect();
                for part in chars.chunks(chars.len().div_ceil(self.parts).max(1)) {
                    self.step(&cancel).await?;
                    req.events.text(&part.iter().collect::<String>());
                }
                self.step(&cancel).await?;
            }
            Ok(TurnOutput {
                text,
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// Records every button press handed to the port's answers; none opens a question.
#[derive(Default)]
pub struct Presses {
    /// Every press, in order.
    pub seen: Mutex<Vec<ButtonPress>>,
}

impl Presses {
    /// Every press so far, in order.
    pub fn seen(&self) -> Vec<ButtonPress> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl ButtonAnswers for Presses {
    fn press(&self, press: ButtonPress) -> BoxFuture<'_, PressOutcome> {
        if let Ok(mut s) = self.seen.lock() {
            s.push(press);
        }
        Box::pin(async { PressOutcome::NotOpen(None) })
    }
}

/// Writes `dir/config.toml` with the state and socket under `dir`, file credentials, and the
/// account table `[table]` with `lines`, and loads it.
pub fn write_config(dir: &Path, table: &str, lines: &str) -> Config {
    let path = dir.join("config.toml");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[{table}]\n{lines}",
        dir.join("state").display(),
        dir.join("run").join("daemon.sock").display(),
    );
    std::fs::write(&path, text).expect("write config");
    Config::load(&path).expect("config")
}

/// What the account runs with besides its configuration.
pub struct BedRun {
    /// The agent every turn goes to.
    pub agent: Arc<dyn Agent>,
    /// Where button presses go (`None`: the confirm questions, as in the daemon).
    pub answers: Option<Arc<dyn ButtonAnswers>>,
    /// The daemon's clock, moved by hand (`None`: the wall clock).
    pub clock: Option<Clock>,
}

impl BedRun {
    /// `agent` answering, presses to the confirm questions, the wall clock.
    pub fn agent(agent: Arc<dyn Agent>) -> Self {
        BedRun {
            agent,
            answers: None,
            clock: None,
        }
    }
}

/// Builds every account through its platform, on ports cut with the run's answers and clock.
struct BedFactory(Ports);

impl ComponentFactory for BedFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        crate::adapters::platform(spec.key.channel).build(self.0.port(spec))
    }
}

/// The daemon running one account (`account`, `<channel>:<name>`) from `config`.
pub struct Bed {
    /// The daemon, started as `run` starts it.
    pub daemon: RunningDaemon,
    /// Its pipeline.
    pub conversation: Arc<Conversation>,
    /// The account the waits look at.
    pub account: &'static str,
    /// Where the credentials are kept (files under the state directory).
    pub credentials: CredentialStore,
    /// The loaded configuration.
    pub config: Config,
}

impl Bed {
    /// Starts the daemon of `config` with `run` (the caller keeps the directory it lives in).
    pub async fn start(config: Config, account: &'static str, run: BedRun) -> Bed {
        let slot: Arc<Mutex<Option<Arc<Conversation>>>> = Arc::default();
        let (seen, agent_config) = (slot.clone(), config.agent.clone());
        let make = move |c: &CredentialStore, s: &Store| -> Arc<dyn ComponentFactory> {
            let conversation = Conversation::new(s.clone(), run.agent);
            if let Ok(mut slot) = seen.lock() {
                *slot = Some(conversation.clone());
            }
            let parts = PlatformParts {
                credentials: c.clone(),
                store: s.clone(),
                conversation,
                agent: agent_config,
                mail: Default::default(),
            };
            let mut ports = parts.ports();
            if let Some(a) = run.answers {
                ports = ports.with_answers(a);
            }
            if let Some(clock) = run.clock {
                ports = ports.with_clock(clock);
            }
            Arc::new(BedFactory(ports))
        };
        let daemon = daemon::start(config.clone(), make, LifecyclePolicy::default())
            .await
            .expect("daemon starts");
        let conversation = slot
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .expect("the factory was made");
        Bed {
            daemon,
            conversation,
            account,
            credentials: CredentialStore::Files(config.state_dir.join("credentials")),
            config,
        }
    }

    /// The account's health now.
    pub fn health(&self) -> ComponentHealth {
        let cell = self.daemon.core.registry().cell(self.account);
        ComponentHealth::clone(&cell.expect("the account is registered").get())
    }

    /// Waits until the account is in `state`.
    pub async fn wait_state(&self, state: ComponentState) {
        let registry = self.daemon.core.registry();
        let waited =
            tokio::time::timeout(WAIT, super::wait_for_state(&registry, self.account, state)).await;
        assert!(waited.is_ok(), "not {state:?} in time: {:?}", self.health());
    }

    /// Waits until `cond` holds on the account's health.
    pub async fn until_health(&self, what: &str, cond: impl Fn(&ComponentHealth) -> bool) {
        let cell = self.daemon.core.registry().cell(self.account);
        let cell = cell.expect("the account is registered");
        let mut changes = cell.subscribe();
        let waited = tokio::time::timeout(WAIT, async {
            while !cond(&cell.get()) {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        assert!(
            waited.is_ok() && cond(&cell.get()),
            "timed out waiting for {what}: {:?}",
            self.health()
        );
    }

    /// Waits until the pipeline is quiet.
    pub async fn settle(&self) {
        let quiet = tokio::time::timeout(WAIT, self.conversation.quiescent()).await;
        assert!(quiet.is_ok(), "the pipeline never went quiet");
    }

    /// Stops the daemon; nothing may be abandoned. Returns the configuration for a restart.
    pub async fn stop(self) -> Config {
        let report = self.daemon.stop().await;
        assert!(
            report.abandoned.is_empty(),
            "abandoned: {:?}",
            report.abandoned
        );
        self.config
    }
}
