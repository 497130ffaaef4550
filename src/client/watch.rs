//! `status --watch`: every redraw reads a fresh status, but parses only the accounts whose
//! answer changed since the last one.
//!
//! The daemon writes an unchanged account as the same bytes (its fields are absolute times and
//! counters, not ages), so an account whose text equals last time's parsed into what it did
//! then; the accounts come sorted by id, so they are compared by position, with no hashing.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{ClientError, not_a_status, unreadable};
use crate::protocol::{AgentHealth, ComponentHealth, DaemonStatus, ErrorCode};

/// The last answer and each account's wire text in it; one per `status --watch` run.
#[derive(Default)]
pub struct StatusWatch {
    /// The accounts as parsed, in the answer's order (sorted by id).
    status: Option<DaemonStatus>,
    /// Each account's wire text, by position.
    texts: Vec<Box<str>>,
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
    /// The status in `line` (a `daemon.status` answer), parsing only the accounts whose text
    /// differs from the one at the same place last time; the answer's other extensions
    /// (confirm, reload) are not kept.
    pub fn read(&mut self, line: &str) -> Result<&DaemonStatus, ClientError> {
        let frame: Frame<'_> = serde_json::from_str(line).map_err(unreadable)?;
        let Some(parts) = frame.status.filter(|_| frame.kind == "daemon.status") else {
            return Err(not_a_status(&frame.kind, frame.code, frame.message));
        };
        let status = self
            .status
            .get_or_insert_with(|| DaemonStatus::new(parts.version.clone(), parts.pid));
        let (mut components, mut texts) = (
            std::mem::take(&mut status.components),
            std::mem::take(&mut self.texts),
        );
        // Accounts gone from the end are forgotten; an account added or removed in between
        // shifts the rest, which are then parsed again (correct, only slower).
        components.truncate(parts.components.len());
        texts.truncate(parts.components.len());
        self.parsed = 0;
        for (i, raw) in parts.components.iter().enumerate() {
            let text = raw.get();
            if texts.get(i).is_some_and(|t| **t == *text) {
                continue;
            }
            let health = serde_json::from_str::<ComponentHealth>(text).map_err(unreadable)?;
            self.parsed += 1;
            if i < components.len() {
                (components[i], texts[i]) = (health, Box::from(text));
            } else {
                components.push(health);
                texts.push(Box::from(text));
            }
        }
        (status.version, status.pid, status.agent) = (parts.version, parts.pid, parts.agent);
        status.components = components;
        self.texts = texts;
        Ok(status)
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
            components,
            ..DaemonStatus::new("0.1.0", 7)
        };
        serde_json::to_string(&ServerEvent::DaemonStatus {
            request_id: "c1".into(),
            status: Box::new(status),
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
        let got = w.read(&line(first.clone())).expect("first").clone();
        assert_eq!(w.parsed_last(), 3);
        assert_eq!(got.components, first);
        // b restarted, c went away, d is new.
        let second = vec![
            health("wechat:a", 0),
            health("wechat:b", 1),
            health("mail:d", 0),
        ];
        let got = w.read(&line(second.clone())).expect("second").clone();
        assert_eq!(
            w.parsed_last(),
            2,
            "b changed and d took c's place; a is as it was"
        );
        assert_eq!(got.components, second);
        assert_eq!((got.version.as_str(), got.pid), ("0.1.0", 7));
        let got = w.read(&line(second.clone())).expect("third").clone();
        assert_eq!(w.parsed_last(), 0);
        assert_eq!(got.components, second);
        // The last account went away: nothing to parse, and it is gone.
        let fourth = second[..2].to_vec();
        let got = w.read(&line(fourth.clone())).expect("fourth").clone();
        assert_eq!(w.parsed_last(), 0);
        assert_eq!(got.components, fourth);
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
