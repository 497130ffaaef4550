//! The in-process daemon the pipeline tests start: the configuration's accounts as memory
//! channels owned by `owner`, the pipeline wired as production wires it, every account
//! connected before the test goes on.

#![allow(dead_code)]

use std::sync::Arc;

use scv_bridge::adapters::memory::MemoryFactory;
use scv_bridge::agent::Agent;
use scv_bridge::config::Config;
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::ComponentState;
use scv_bridge::store::Store;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::wait_for_state;

/// Starts the daemon for `config` with the agent `make` builds over the daemon's store; returns
/// it, the memory accounts' factory and the pipeline once every account is connected.
pub async fn start(
    config: Config,
    owner: &'static str,
    make: impl FnOnce(&Store) -> Arc<dyn Agent> + Send + 'static,
) -> (RunningDaemon, Arc<MemoryFactory>, Arc<Conversation>) {
    let cell = Arc::new(std::sync::OnceLock::new());
    let c2 = cell.clone();
    let d = daemon::start_with(
        config,
        move |creds, store, _| {
            let conv = Conversation::new(store.clone(), make(store));
            let factory = MemoryFactory::new(
                Some(owner),
                scv_bridge::port::Ports::new(store.clone(), creds.clone(), conv.clone()),
            );
            let _ = c2.set((factory.clone(), conv.clone()));
            let f: Arc<dyn ComponentFactory> = factory;
            Wiring {
                factory: f,
                conversation: Some(conv),
                confirm: None,
            }
        },
        LifecyclePolicy::default(),
    )
    .await
    .expect("start");
    let (factory, conv) = cell.get().cloned().expect("wired");
    for id in d.core.registry().snapshot().iter().map(|h| h.id.clone()) {
        wait_for_state(&d.core.registry(), &id, ComponentState::Connected).await;
    }
    (d, factory, conv)
}
