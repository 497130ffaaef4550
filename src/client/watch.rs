//! `status --watch`: every redraw reads a fresh status, but parses only the accounts whose
//! answer changed since the last one.
//!
//! The daemon writes an unchanged account as the same bytes (its fields are absolute times and
//! counters, not ages), so the wire text of an account is a safe key for what it parsed into.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{ClientError, not_a_status, unreadable};
use crate::protocol::{AgentHealth, ComponentHealth, DaemonStatus, ErrorCode};

/// The accounts of the last answer by their exact wire text; one per `status --watch` run.
#[derive(Default)]
pub struct StatusWatch {
    known: HashMap<Box<str>, ComponentHealth>,
    parsed: usize,
}

/// The envelope, with each account left as its raw text.
#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    status: Option<Parts<'a>>,
    code: Option<ErrorCode>,
    message: Option<String>,
}

/// What the table shows, accounts unparsed.
#[derive(Deserialize)]
struct Parts<'a> {
    version: String,
    pid: u32,
    #[serde(borrow, default)]
    components: Vec<&'a RawValue>,
    #[serde(default)]
    agent: Option<Box<AgentHealth>>,
}

impl StatusWatch {
    /// The status in `line` (a `daemon.status` answer), parsing only accounts not seen as they
    /// are now; the rest of the answer's extensions (confirm, reload) are not kept.
    pub fn read(&mut self, line: &str) -> Result<DaemonStatus, ClientError> {
        let frame: Frame<'_> = serde_json::from_str(line).map_err(unreadable)?;
        let Some(parts) = frame.status.filter(|_| frame.kind == "daemon.status") else {
            return Err(not_a_status(&frame.kind, frame.code, frame.message));
        };
        let mut known = HashMap::with_capacity(parts.components.len());
        let mut components = Vec::with_capacity(parts.components.len());
        self.parsed = 0;
        for raw in parts.components {
            let text = raw.get();
            let health = match self.known.remove(text) {
                Some(h) => h,
                None => {
                    self.parsed += 1;
                    serde_json::from_str::<ComponentHealth>(text).map_err(unreadable)?
                }
            };
            components.push(health.clone());
            known.insert(Box::from(text), health);
        }
        // Accounts gone from this answer are forgotten with the old map.
        self.known = known;
        Ok(DaemonStatus {
            version: parts.version,
            pid: parts.pid,
            components,
            delegations: Default::default(),
            restart: None,
            confirm: None,
            project: None,
            agent: parts.agent,
            reload: None,
        })
    }

    /// How many accounts the last [`StatusWatch::read`] had to parse.
    pub fn parsed_last(&self) -> usize {
        self.parsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ComponentState, ServerEvent};

    fn health(id: &str, restarts: u64) -> ComponentHealth {
        let (channel, account) = id.split_once(':').unwrap_or(("wechat", id));
        let mut h = ComponentHealth::new(channel, account, true);
        h.state = ComponentState::Connected;
        h.restarts = restarts;
        h
    }

    fn line(components: Vec<ComponentHealth>) -> String {
        let status = DaemonStatus {
            version: "0.1.0".into(),
            pid: 7,
            components,
            delegations: Default::default(),
            restart: None,
            confirm: None,
            project: None,
            agent: None,
            reload: None,
        };
        serde_json::to_string(&ServerEvent::DaemonStatus {
            request_id: "c1".into(),
            status,
        })
        .unwrap_or_default()
    }

    #[test]
    fn only_changed_accounts_are_parsed_and_the_result_is_a_full_parse() {
        let mut w = StatusWatch::default();
        let first = vec![
            health("wechat:a", 0),
            health("wechat:b", 0),
            health("feishu:c", 0),
        ];
        let got = w.read(&line(first.clone())).expect("first");
        assert_eq!(w.parsed_last(), 3);
        assert_eq!(got.components, first);
        // b restarted, c went away, d is new.
        let second = vec![
            health("wechat:a", 0),
            health("wechat:b", 1),
            health("mail:d", 0),
        ];
        let got = w.read(&line(second.clone())).expect("second");
        assert_eq!(w.parsed_last(), 2, "b changed and d is new; a is as it was");
        assert_eq!(got.components, second);
        assert_eq!((got.version.as_str(), got.pid), ("0.1.0", 7));
        let got = w.read(&line(second.clone())).expect("third");
        assert_eq!(w.parsed_last(), 0);
        assert_eq!(got.components, second);
    }

    #[test]
    fn an_error_answer_is_the_daemons_error() {
        let mut w = StatusWatch::default();
        let e = w
            .read(r#"{"type":"error","code":"unknown","message":"nope"}"#)
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("nope"));
        assert!(w.read("not json").is_err());
    }
}
