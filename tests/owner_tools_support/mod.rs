//! A daemon for the owner's end-to-end tests, shared by the binaries that drive a real backend
//! through the owner tools (`confirm`: `send` and the `openai` backend against the fake model;
//! `acp_real`: the real codex-acp): one MemoryChannel account `wechat:phone` whose owner is
//! `confirm_support::OWNER` and who is `notify`, times read in New York, the clock hand-moved,
//! and the agent the test makes over the daemon's own store. The daemon starts the owner tools'
//! endpoint and hands it to the pipeline, as in production.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::adapters::memory::MemoryChannel;
use scv_bridge::agent::Agent;
use scv_bridge::config::Config;
use scv_bridge::confirm::Clock;
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::ComponentState;
use scv_bridge::store::Store;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};

use crate::confirm_support::{MemoryFactory, save_owner, within};

/// Saturday 2026-03-07 12:00 in New York (EST, UTC-5).
pub const SAT_NOON_MS: u64 = 1_772_902_800_000;
/// 12:30 the same day.
pub const SAT_HALF_PAST_MS: u64 = SAT_NOON_MS + 30 * 60_000;

/// The running daemon and what a test looks at.
pub struct ToolsDaemon {
    pub d: RunningDaemon,
    pub conv: Arc<Conversation>,
    pub channel: Arc<MemoryChannel>,
    pub clock: Clock,
}

/// Starts the daemon at `now_ms` with `account` (TOML lines) in the account's table and the
/// agent `make` builds over the daemon's store.
pub async fn start(
    dir: &Path,
    now_ms: u64,
    account: &str,
    make: impl FnOnce(&Store) -> Arc<dyn Agent> + Send + 'static,
) -> ToolsDaemon {
    start_with(dir, true, now_ms, account, make).await
}

/// [`start`], with the account the `notify` target only when `notify` is true.
pub async fn start_with(
    dir: &Path,
    notify: bool,
    now_ms: u64,
    account: &str,
    make: impl FnOnce(&Store) -> Arc<dyn Agent> + Send + 'static,
) -> ToolsDaemon {
    let state = dir.join("state");
    std::fs::create_dir_all(&state).expect("state dir");
    let path = dir.join("config.toml");
    let notify = if notify {
        "notify = \"wechat:phone\"\n"
    } else {
        ""
    };
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n\
         timezone = \"America/New_York\"\n{notify}[wechat.phone]\n{account}",
        state.display(),
        dir.join("run").join("daemon.sock").display()
    );
    std::fs::write(&path, text).expect("config");
    save_owner(&state);
    let config = Config::load(&path).expect("load config");
    let channel = MemoryChannel::new(2000, Duration::ZERO);
    let clock = Clock::manual(now_ms);
    let slot = Arc::new(std::sync::Mutex::new(None));
    let make = std::sync::Mutex::new(Some(make));
    let (ch, ck, sl) = (channel.clone(), clock.clone(), slot.clone());
    let wire =
        move |creds: &scv_bridge::secrets::CredentialStore, store: &Store, registry: &Arc<_>| {
            let agent = make
                .lock()
                .expect("lock")
                .take()
                .expect("the agent is made once")(store);
            let (confirm, conv) = daemon::confirm_and_pipeline(store, creds, ck, registry, agent);
            let factory: Arc<dyn ComponentFactory> = Arc::new(MemoryFactory {
                conv: conv.clone(),
                channel: ch,
            });
            *sl.lock().expect("lock") = Some(conv.clone());
            Wiring {
                factory,
                conversation: Some(conv),
                confirm: Some(confirm),
            }
        };
    let d = daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .expect("daemon");
    scv_bridge::testing::wait_for_state(
        &d.core.registry(),
        "wechat:phone",
        ComponentState::Connected,
    )
    .await;
    let conv = slot.lock().expect("lock").take().expect("conversation");
    ToolsDaemon {
        d,
        conv,
        channel,
        clock,
    }
}

impl ToolsDaemon {
    /// Moves the clock to `ms` and waits until the scheduler and the chat have acted on it.
    pub async fn at(&self, ms: u64) {
        self.clock.set(ms);
        let owner = self.d.core.owner().expect("owner service");
        within(owner.passed(ms)).await;
        within(self.conv.quiescent()).await;
    }
}
