//! The agent the pipeline answers with, swappable while it runs: a reload that changes
//! `[agent]` (or the console's model form) puts a new one in place; a turn takes the agent of
//! the moment it starts and finishes on it, whatever is swapped in meanwhile.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::agent::{Agent, AgentMonitor};

/// One agent with what status says about it (its description and how its turns end): swapped
/// together, so the status row never describes one agent with another's failures.
pub(crate) struct Backend {
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) monitor: AgentMonitor,
}

/// The current agent, and the ones swapped out (released at shutdown: a turn may still run on
/// one, and releasing it early would end that turn's agent process under it).
pub(crate) struct Backends {
    current: ArcSwap<Backend>,
    retired: Mutex<Vec<Arc<dyn Agent>>>,
}

impl Backends {
    pub(crate) fn new(agent: Arc<dyn Agent>) -> Self {
        Backends {
            current: ArcSwap::from_pointee(Backend::of(agent)),
            retired: Mutex::new(Vec::new()),
        }
    }

    /// The agent answering now (held by a turn until it ends).
    pub(crate) fn current(&self) -> Arc<Backend> {
        self.current.load_full()
    }

    /// Puts `agent` in place for the turns that start from now on.
    pub(crate) fn replace(&self, agent: Arc<dyn Agent>) {
        let old = self.current.swap(Arc::new(Backend::of(agent)));
        self.retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(old.agent.clone());
    }

    /// Releases every agent (processes, connections), the swapped-out ones too.
    pub(crate) async fn close(&self) {
        let retired = std::mem::take(&mut *self.retired.lock().unwrap_or_else(|p| p.into_inner()));
        for agent in retired {
            agent.close().await;
        }
        self.current().agent.close().await;
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
