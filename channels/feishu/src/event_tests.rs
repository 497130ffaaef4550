use serde_json::json;

use super::*;

fn message(chat_type: &str, content: &str, mentions: serde_json::Value) -> Vec<u8> {
    json!({
        "schema": "2.0",
        "header": {"event_id": "ev1", "event_type": "im.message.receive_v1", "create_time": "1700000000000",
                   "token": "vt", "app_id": "cli_x", "tenant_key": "tk"},
        "event": {
            "sender": {"sender_id": {"open_id": "ou_alice", "union_id": "on_a"}, "sender_type": "user", "tenant_key": "tk"},
            "message": {"message_id": "om_1", "chat_id": "oc_1", "chat_type": chat_type, "message_type": "text",
                        "content": content, "mentions": mentions, "create_time": 1700000000001i64}
        }
    })
    .to_string()
    .into_bytes()
}

#[test]
fn p2p_text() {
    let ev = parse_event(&message("p2p", r#"{"text":"hello"}"#, json!([]))).unwrap();
    assert_eq!(ev.header.event_id, "ev1");
    assert_eq!(ev.header.create_time_ms, Some(1700000000000));
    assert_eq!(ev.header.app_id.as_deref(), Some("cli_x"));
    let EventBody::Message(m) = ev.body else {
        panic!("not a message")
    };
    assert_eq!(m.chat_type, ChatType::P2p);
    assert!(!m.chat_type.is_group());
    assert_eq!(m.sender_open_id, "ou_alice");
    assert!(m.is_from_user());
    assert_eq!(m.message_id, "om_1");
    assert_eq!(m.create_time_ms, Some(1700000000001));
    assert_eq!(m.text(None).as_deref(), Some("hello"));
}

#[test]
fn group_mentions_of_the_bot() {
    let mentions = json!([
        {"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "Bot"},
        {"key": "@_user_10", "id": {"open_id": "ou_bob"}, "name": "Bob"}
    ]);
    let ev = parse_event(&message(
        "group",
        r#"{"text":"@_user_1 ask @_user_10 now"}"#,
        mentions,
    ))
    .unwrap();
    let EventBody::Message(m) = ev.body else {
        panic!("not a message")
    };
    assert!(m.chat_type.is_group());
    assert!(m.mentions_bot("ou_bot"));
    assert!(!m.mentions_bot("ou_other"));
    assert_eq!(m.text(Some("ou_bot")).as_deref(), Some("ask @Bob now"));
}

#[test]
fn post_shapes_flatten() {
    for content in [
        json!({"title": "T", "content": [[{"tag": "text", "text": "a"}, {"tag": "a", "text": "b", "href": "x"}], [{"tag": "hr"}]]}),
        json!({"zh_cn": {"title": "T", "content": [[{"tag": "text", "text": "ab"}], []]}}),
        json!({"post": {"zh_cn": {"title": "T", "content": [[{"tag": "text", "text": "ab"}], []]}}}),
    ] {
        let m = MessageEvent {
            sender_open_id: "ou".into(),
            sender_union_id: None,
            sender_type: "user".into(),
            message_id: "om".into(),
            root_id: None,
            parent_id: None,
            thread_id: None,
            chat_id: "oc".into(),
            chat_type: ChatType::P2p,
            message_type: "post".into(),
            content: content.to_string(),
            mentions: vec![],
            create_time_ms: None,
        };
        assert_eq!(m.text(None).as_deref(), Some("T\nab"));
    }
}

#[test]
fn card_action_with_string_value_and_context() {
    let payload = json!({
        "schema": "2.0",
        "header": {"event_id": "ev2", "event_type": "card.action.trigger"},
        "event": {
            "operator": {"open_id": "ou_owner"},
            "token": "c-123",
            "action": {"tag": "button", "value": "{\"q\":\"q-9\",\"a\":\"no\"}"},
            "context": {"open_message_id": "om_card", "open_chat_id": "oc_1"}
        }
    });
    assert_eq!(
        peek_event_type(payload.to_string().as_bytes()).as_deref(),
        Some(CARD_ACTION)
    );
    let ev = parse_event(payload.to_string().as_bytes()).unwrap();
    let EventBody::CardAction(c) = ev.body else {
        panic!("not a card action")
    };
    assert_eq!(c.operator_open_id, "ou_owner");
    assert_eq!(c.yes_no(), Some(("q-9", Answer::No)));
    assert_eq!(c.open_message_id.as_deref(), Some("om_card"));
    assert_eq!(c.token.as_deref(), Some("c-123"));
}

#[test]
fn legacy_card_callback() {
    let payload = json!({"open_id": "ou_o", "open_message_id": "om_c", "token": "c-1",
                         "action": {"tag": "button", "value": {"q": "q1", "a": "yes"}}});
    let ev = parse_event(payload.to_string().as_bytes()).unwrap();
    assert_eq!(ev.header.event_type, CARD_ACTION);
    let EventBody::CardAction(c) = ev.body else {
        panic!("not a card action")
    };
    assert_eq!(c.yes_no(), Some(("q1", Answer::Yes)));
}

#[test]
fn hostile_payloads_are_errors_not_panics() {
    for p in [
        &b"not json"[..],
        b"[]",
        b"{}",
        br#"{"header":{"event_id":1}}"#,
        br#"{"header":{"event_id":"e","event_type":"im.message.receive_v1"},"event":{"sender":7}}"#,
    ] {
        assert!(parse_event(p).is_err(), "{}", String::from_utf8_lossy(p));
    }
    let other = br#"{"header":{"event_id":"e","event_type":"x.y"},"event":{"k":1}}"#;
    assert!(matches!(
        parse_event(other).unwrap().body,
        EventBody::Other(_)
    ));
}
