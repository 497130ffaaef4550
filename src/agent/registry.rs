//! The named agents (`[agents.NAME]`) built beside the default one: the composition root
//! builds them at start, a reload rebuilds the ones whose table (or stored key) changed. The
//! pipeline's registry (`conversation/backend.rs`) holds them and decides which answers a chat.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Agent;
use crate::config::{AgentConfig, Config};
use crate::secrets::{CredentialStore, Secret};
use crate::store::Store;

/// Builds every named agent of `named`; one that cannot work is a stand-in that says why (see
/// [`super::build`]). The key `login agent` stored is `[agent]`'s and never handed to a named
/// agent (it may be another provider's): each gets the key stored under its own name (the
/// console's agent form, [`stored_keys`]) when `named` carries it, else reads its own
/// `api_key_env` (or `OPENAI_API_KEY`) from the daemon's environment.
pub fn build_named(
    named: &BTreeMap<String, AgentConfig>,
    store: &Store,
) -> BTreeMap<String, Arc<dyn Agent>> {
    named
        .iter()
        .map(|(name, cfg)| (name.clone(), super::build(cfg, store.clone())))
        .collect()
}

/// `named` with each agent's stored key (`secrets::named_agent_key_id`) in `stored_api_key`;
/// reads the credential store (blocking). An unreadable key is the same as none: the agent
/// then says what is missing.
pub fn with_stored_keys(
    named: &BTreeMap<String, AgentConfig>,
    creds: &CredentialStore,
) -> BTreeMap<String, AgentConfig> {
    let keys = stored_keys(named, creds);
    let mut keyed = named.clone();
    for (name, cfg) in keyed.iter_mut() {
        cfg.stored_api_key = keys.get(name).cloned();
    }
    keyed
}

/// The keys stored for the agents of `named`, by name (blocking reads).
pub fn stored_keys(
    named: &BTreeMap<String, AgentConfig>,
    creds: &CredentialStore,
) -> BTreeMap<String, Secret> {
    named
        .keys()
        .filter_map(|name| match creds.named_agent_key(name) {
            Ok(key) => key.map(|k| (name.clone(), k)),
            Err(e) => {
                tracing::warn!(agent = %name, error = %e, "a named agent's stored key cannot be read");
                None
            }
        })
        .collect()
}

/// What a reload does with the named agents: `old`'s agents where the table is unchanged and
/// the name is not in `renew` (`running` gives the one running under a name), new ones built
/// for the rest with their key from `keys`. `renew` names agents whose stored key changed,
/// which the file cannot show.
pub fn rebuild_named(
    (old, new): (&Config, &Config),
    running: impl Fn(&str) -> Option<Arc<dyn Agent>>,
    keys: &BTreeMap<String, Secret>,
    renew: &[String],
    store: &Store,
) -> BTreeMap<String, Arc<dyn Agent>> {
    let mut built = BTreeMap::new();
    for (name, cfg) in &new.agents {
        let same = old.agents.get(name) == Some(cfg) && !renew.contains(name);
        let agent = match (same, running(name)) {
            (true, Some(agent)) => agent,
            _ => {
                let mut cfg = cfg.clone();
                cfg.stored_api_key = keys.get(name).cloned();
                super::build(&cfg, store.clone())
            }
        };
        built.insert(name.clone(), agent);
    }
    built
}
