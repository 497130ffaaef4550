//! Golden tests: every example of `daemon-protocol.md` round-trips to the same JSON value.

use scv_bridge::protocol::*;
use serde_json::{Value, json};

const EXAMPLES: &str = include_str!("../fixtures/protocol-examples.jsonl");

/// Parses a line as a client message or a server event and re-serializes it.
fn round_trip(line: &str) -> Value {
    let v: Value = serde_json::from_str(line).expect("example is JSON");
    let is_client = matches!(v["type"].as_str(), Some("initialize" | "daemon.control"));
    if is_client {
        let m: ClientMessage = serde_json::from_str(line).expect("client message parses");
        serde_json::to_value(m).expect("serializes")
    } else {
        let e: ServerEvent = serde_json::from_str(line).expect("server event parses");
        serde_json::to_value(e).expect("serializes")
    }
}

#[test]
fn every_spec_example_round_trips_exactly() {
    let mut n = 0;
    for line in EXAMPLES.lines().filter(|l| !l.trim().is_empty()) {
        let original: Value = serde_json::from_str(line).expect("json");
        assert_eq!(round_trip(line), original, "example {line}");
        n += 1;
    }
    assert_eq!(n, 6, "the spec has six examples");
}

#[test]
fn optional_fields_are_omitted_or_null_as_specified() {
    let mut h = ComponentHealth::new("wechat", "phone", true);
    h.state = ComponentState::Connected;
    let v = serde_json::to_value(&h).expect("ser");
    // Always present, null when unknown.
    for key in ["bot_id", "user_id", "last_success_unix_seconds", "error"] {
        assert_eq!(v[key], Value::Null, "{key} present as null");
        assert!(v.as_object().is_some_and(|o| o.contains_key(key)));
    }
    // Omitted when absent.
    for key in [
        "senders",
        "purpose",
        "mail",
        "since_unix_seconds",
        "action",
        "code",
        "command",
        "notes",
    ] {
        assert!(v.get(key).is_none(), "{key} omitted");
    }
    let status = DaemonStatus::new("0.1.0", 1);
    assert_eq!(
        serde_json::to_value(&status).expect("ser"),
        json!({"version":"0.1.0","pid":1,"components":[],"delegations":{"active":0,"reaped":0}})
    );
    let err = ServerEvent::error(None, ErrorCode::Internal, "x", false);
    assert_eq!(
        serde_json::to_value(&err).expect("ser"),
        json!({"type":"error","code":"internal","message":"x","fatal":false})
    );
    let set = DaemonCommand::ChannelSet {
        channel: "wechat".into(),
        account: "a".into(),
        enabled: Some(false),
        workspace: None,
        remote_tools: None,
        senders: None,
        purpose: None,
    };
    assert_eq!(
        serde_json::to_value(&set).expect("ser"),
        json!({"action":"channel_set","channel":"wechat","account":"a","enabled":false,"workspace":null})
    );
}

#[test]
fn unknown_enum_values_read_as_unknown() {
    let e: ServerEvent =
        serde_json::from_str(r#"{"type":"error","code":"teapot","message":"m","fatal":false}"#)
            .expect("parses");
    assert!(matches!(
        e,
        ServerEvent::Error {
            code: ErrorCode::Unknown,
            ..
        }
    ));
    let c: ConfirmInfo = serde_json::from_str(
        r#"{"id":"q","state":"reconsidering","chat":"feishu:w","deadline_unix_seconds":1}"#,
    )
    .expect("parses");
    assert_eq!(c.state, ConfirmState::Unknown);
    let h: ComponentHealth =
        serde_json::from_str(r#"{"id":"x:y","state":"hibernating"}"#).expect("parses");
    assert_eq!(h.state, ComponentState::Unknown);
    assert_eq!(h.channel, "", "channel reads as empty when absent");
}

#[test]
fn unknown_fields_are_ignored_and_mail_counts_default() {
    let m: ClientMessage = serde_json::from_str(
        r#"{"type":"daemon.control","request_id":"r","future":1,"command":{"action":"status","extra":true}}"#,
    )
    .expect("parses");
    assert_eq!(
        m,
        ClientMessage::DaemonControl {
            request_id: "r".into(),
            command: DaemonCommand::Status
        }
    );
    let counts: MailCounts = serde_json::from_str(r#"{"queued":2,"new_thing":5}"#).expect("parses");
    assert_eq!(counts.queued, 2);
    assert_eq!(counts.claimed, 0);
    assert_eq!(counts.last_check_unix_seconds, None);
}

#[test]
fn out_of_scope_actions_parse_to_unsupported_variants() {
    for (action, want) in [
        (r#"{"action":"delegations"}"#, DaemonCommand::Delegations),
        (
            r#"{"action":"delegation_kill","id":"d1"}"#,
            DaemonCommand::DelegationKill,
        ),
        (
            r#"{"action":"restart_when_idle"}"#,
            DaemonCommand::RestartWhenIdle,
        ),
        (
            r#"{"action":"project_open","path":"/x"}"#,
            DaemonCommand::Other,
        ),
    ] {
        let c: DaemonCommand = serde_json::from_str(action).expect(action);
        assert_eq!(c, want);
    }
}

#[test]
fn a_failure_travels_as_code_action_command_and_notes_beside_error() {
    let mut h = ComponentHealth::new("wechat", "phone", true);
    h.state = ComponentState::Failed;
    h.error = Some("session expired; no owner paired".into());
    h.action = Some("run `scv-bridge login wechat phone`".into());
    h.code = Some("wechat.session_expired".into());
    h.command = Some("scv-bridge login wechat phone".into());
    h.notes = vec![HealthNote {
        source: NoteSource::Account,
        text: "no owner paired".into(),
    }];
    let v = serde_json::to_value(&h).expect("ser");
    assert_eq!(
        v["error"], "session expired; no owner paired",
        "as old clients read it"
    );
    assert_eq!(v["code"], "wechat.session_expired");
    assert_eq!(v["action"], "run `scv-bridge login wechat phone`");
    assert_eq!(v["command"], "scv-bridge login wechat phone");
    assert_eq!(
        v["notes"],
        json!([{"source":"account","text":"no owner paired"}])
    );
    let back: ComponentHealth = serde_json::from_value(v).expect("parses");
    assert_eq!(back, h);
    // A source from a newer daemon reads as unknown; an old daemon's health lacks them all.
    let newer: ComponentHealth = serde_json::from_str(
        r#"{"id":"x:y","state":"connected","notes":[{"source":"quota","text":"t"}]}"#,
    )
    .expect("parses");
    assert_eq!(newer.notes[0].source, NoteSource::Unknown);
    let old: ComponentHealth =
        serde_json::from_str(r#"{"id":"x:y","state":"failed","error":"e"}"#).expect("parses");
    assert_eq!((old.code, old.command, old.notes), (None, None, vec![]));
}
