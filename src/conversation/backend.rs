//! The registry of agents the pipeline answers with, swappable while it runs: `default` (from
//! `[agent]`) and the named ones (`[agents.NAME]`), with which agents each account's chats
//! talk to. A reload that changes them (or the console's model form) puts new ones in place;
//! a turn takes its agent at the moment it starts and finishes on it, whatever is swapped in
//! meanwhile.
//!
//! Stable: `default` is always present; a name maps to one agent at a time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::agent::{Agent, AgentMonitor};
use crate::config::{AccountKey, AgentChoice, Choices, DEFAULT_AGENT};

/// One agent with what status says about it (its description and how its turns end): swapped
/// together, so the status row never describes one agent with another's failures.
pub(crate) struct Backend {
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) monitor: AgentMonitor,
}

/// The named agents, `default` not among them.
type Named = BTreeMap<String, Arc<Backend>>;

/// The agents answering now, the accounts' choices, and the agents swapped out (released at
/// shutdown: a turn may still run on one, and releasing it early would end that turn's agent
/// process under it).
pub(crate) struct Backends {
    default: ArcSwap<Backend>,
    named: ArcSwap<Named>,
    choices: ArcSwap<Choices>,
    retired: Mutex<Vec<Arc<dyn Agent>>>,
}

impl Backends {
    pub(crate) fn new(agent: Arc<dyn Agent>) -> Self {
        Backends {
            default: ArcSwap::from_pointee(Backend::of(agent)),
            named: ArcSwap::from_pointee(Named::new()),
            choices: ArcSwap::from_pointee(Choices::new()),
            retired: Mutex::new(Vec::new()),
        }
    }

    /// The default agent (held by a turn until it ends).
    pub(crate) fn current(&self) -> Arc<Backend> {
        self.default.load_full()
    }

    /// The agent called `name`, if there is one.
    pub(crate) fn named(&self, name: &str) -> Option<Arc<Backend>> {
        match name {
            DEFAULT_AGENT => Some(self.current()),
            other => self.named.load().get(other).cloned(),
        }
    }

    /// Every agent's name, `default` first.
    pub(crate) fn names(&self) -> Vec<String> {
        let rest = self.named.load().keys().cloned().collect::<Vec<_>>();
        std::iter::once(DEFAULT_AGENT.to_string())
            .chain(rest)
            .collect()
    }

    /// Every agent with its name, `default` first.
    pub(crate) fn all(&self) -> Vec<(String, Arc<Backend>)> {
        let named = self.named.load();
        std::iter::once((DEFAULT_AGENT.to_string(), self.current()))
            .chain(named.iter().map(|(n, b)| (n.clone(), b.clone())))
            .collect()
    }

    /// Which agents `account`'s chats talk to (the default's alone when it has no choice).
    pub(crate) fn choice(&self, account: &AccountKey) -> AgentChoice {
        self.choices
            .load()
            .get(account)
            .cloned()
            .unwrap_or_default()
    }

    /// Puts `agent` in place of the default for the turns that start from now on.
    pub(crate) fn replace(&self, agent: Arc<dyn Agent>) {
        let old = self.default.swap(Arc::new(Backend::of(agent)));
        self.retire(std::iter::once(old));
    }

    /// Puts the named agents (`default` aside) and the accounts' choices in place. An agent
    /// given again (the same `Arc`) keeps its status row; one no longer given is retired.
    pub(crate) fn set_named(&self, given: BTreeMap<String, Arc<dyn Agent>>, choices: Choices) {
        let old = self.named.load_full();
        let mut named = Named::new();
        for (name, agent) in given.into_iter().filter(|(n, _)| n != DEFAULT_AGENT) {
            let kept = old
                .get(&name)
                .filter(|b| Arc::ptr_eq(&b.agent, &agent))
                .cloned();
            named.insert(name, kept.unwrap_or_else(|| Arc::new(Backend::of(agent))));
        }
        let gone: Vec<Arc<Backend>> = old
            .iter()
            .filter(|(n, b)| !named.get(*n).is_some_and(|k| Arc::ptr_eq(k, b)))
            .map(|(_, b)| b.clone())
            .collect();
        self.named.store(Arc::new(named));
        self.choices.store(Arc::new(choices));
        self.retire(gone.into_iter());
    }

    fn retire(&self, gone: impl Iterator<Item = Arc<Backend>>) {
        let mut retired = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        retired.extend(gone.map(|b| b.agent.clone()));
    }

    /// Releases every agent (processes, connections), the swapped-out ones too.
    pub(crate) async fn close(&self) {
        let retired = std::mem::take(&mut *self.retired.lock().unwrap_or_else(|p| p.into_inner()));
        for agent in retired {
            agent.close().await;
        }
        for (_, b) in self.all() {
            b.agent.close().await;
        }
    }
}

/// The registry as the rest of the daemon sees it: status rows, and what the composition root
/// and a reload put in place.
impl super::Conversation {
    /// The `agent` object of the status: backend, model, ok / not configured / failing, the fix,
    /// and the agent processes when the backend runs any.
    pub fn agent_health(&self) -> crate::protocol::AgentHealth {
        let backend = self.backends.current();
        let mut health = backend.monitor.health();
        health.processes = backend.agent.processes();
        health
    }

    /// Answers with `agent` from the next turn on; turns in flight finish on the agent they
    /// started with (made by the daemon's reload when `[agent]` changed).
    pub fn replace_agent(&self, agent: Arc<dyn Agent>) {
        self.backends.replace(agent);
    }

    /// Puts the named agents (`[agents.NAME]`; `default` is `replace_agent`'s) and which of
    /// them each account's chats talk to in place; turns in flight finish on their agent.
    /// An agent given again (the same `Arc`) keeps its status row. Made by the composition
    /// root at start and by a reload.
    pub fn set_agents(
        &self,
        named: std::collections::BTreeMap<String, Arc<dyn Agent>>,
        choices: crate::config::Choices,
    ) {
        self.backends.set_named(named, choices);
    }

    /// The agent called `name` now (`default` is `[agent]`'s), for a reload that keeps it.
    pub fn named_agent(&self, name: &str) -> Option<Arc<dyn Agent>> {
        self.backends.named(name).map(|b| b.agent.clone())
    }

    /// Every named agent's status row (`default`'s is [`Conversation::agent_health`]).
    pub fn named_agents_health(
        &self,
    ) -> std::collections::BTreeMap<String, crate::protocol::AgentHealth> {
        let all = self.backends.all().into_iter();
        all.filter(|(n, _)| n != crate::config::DEFAULT_AGENT)
            .map(|(name, b)| {
                let mut health = b.monitor.health();
                health.processes = b.agent.processes();
                (name, health)
            })
            .collect()
    }
}

impl Backend {
    fn of(agent: Arc<dyn Agent>) -> Self {
        Backend {
            monitor: AgentMonitor::new(agent.describe()),
            agent,
        }
    }
}
