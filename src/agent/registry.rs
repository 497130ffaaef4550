//! The named agents (`[agents.NAME]`) built beside the default one: the composition root
//! builds them at start, a reload rebuilds the ones whose table changed. The pipeline's
//! registry (`conversation/backend.rs`) holds them and decides which answers a chat.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Agent;
use crate::config::{AgentConfig, Config};
use crate::store::Store;

/// Builds every named agent of `named`; one that cannot work is a stand-in that says why (see
/// [`super::build`]). The key `login agent` stored is `[agent]`'s and never handed to a named
/// agent (it may be another provider's): each reads its own `api_key_env` (or
/// `OPENAI_API_KEY`) from the daemon's environment.
pub fn build_named(
    named: &BTreeMap<String, AgentConfig>,
    store: &Store,
) -> BTreeMap<String, Arc<dyn Agent>> {
    named
        .iter()
        .map(|(name, cfg)| (name.clone(), super::build(cfg, store.clone())))
        .collect()
}

/// What a reload does with the named agents: `old`'s agents where the table is unchanged
/// (`running` gives the one running under a name), new ones built for the rest.
pub fn rebuild_named(
    old: &Config,
    new: &Config,
    running: impl Fn(&str) -> Option<Arc<dyn Agent>>,
    store: &Store,
) -> BTreeMap<String, Arc<dyn Agent>> {
    let mut built = BTreeMap::new();
    for (name, cfg) in &new.agents {
        let same = old.agents.get(name) == Some(cfg);
        let agent = match (same, running(name)) {
            (true, Some(agent)) => agent,
            _ => {
                let one = BTreeMap::from([(name.clone(), cfg.clone())]);
                match build_named(&one, store).pop_first() {
                    Some((_, agent)) => agent,
                    None => continue,
                }
            }
        };
        built.insert(name.clone(), agent);
    }
    built
}
