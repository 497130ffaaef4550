//! Held replies in the account's state: who asked, what a request takes, what is forgotten.

use super::*;
use crate::store::Store;

fn reply(peer: &str, client_id: &str, at_ms: i64) -> HeldReply {
    HeldReply {
        peer: peer.into(),
        client_id: client_id.into(),
        text: format!("reply {client_id}"),
        media: None,
        at_ms,
    }
}

#[test]
fn only_the_bare_command_asks_again() {
    for yes in ["/again", " /again\n", "/AGAIN"] {
        assert!(is_request(yes), "{yes:?}");
    }
    for no in ["/again please", "again", "do it /again", ""] {
        assert!(!is_request(no), "{no:?}");
    }
}

#[test]
fn the_note_quotes_the_start_of_the_reply_on_one_line() {
    let n = note(Lang::En, "Line one\n\nline   two");
    assert!(n.contains("\"Line one line two\""), "{n}");
    let long = "x".repeat(100);
    let n = note(Lang::En, &long);
    assert!(
        n.contains(&format!("\"{}…\"", "x".repeat(PREVIEW_CHARS))),
        "{n}"
    );
}

#[tokio::test]
async fn a_request_takes_that_chats_held_replies_oldest_first_and_nothing_else() {
    let (store, _guard) = Store::open_in_memory().expect("store");
    let state = AccountState::new(store, "wechat:t");
    for r in [
        reply("a", "c2", 20),
        reply("b", "c3", 15),
        reply("a", "c1", 10),
    ] {
        hold(&state, r).await.expect("hold");
    }
    let holding = peers_holding(&state, vec!["a".into(), "z".into()])
        .await
        .expect("read");
    assert_eq!(holding, HashSet::from(["a".to_string()]));
    let (taken, left) = state
        .call(|s| {
            request_in(s, &[("a".into(), "id:7".into())])?;
            let taken: Request = s
                .get_json(&format!("{AGAIN_REQUEST}id:7"))?
                .expect("the request is stored");
            Ok((taken, held_in(s)?))
        })
        .await
        .expect("request");
    let ids: Vec<&str> = taken.held.iter().map(|h| h.client_id.as_str()).collect();
    assert_eq!(ids, ["c1", "c2"]);
    assert_eq!(taken.peer, "a");
    let left: Vec<&str> = left.iter().map(|(_, h)| h.client_id.as_str()).collect();
    assert_eq!(left, ["c3"], "another chat's held reply stays");
    // The held send records say so: an attempt under those ids never starts again.
    let record = super::super::state::begin_send(&state, "c1", 30)
        .await
        .expect("begin");
    assert!(record.held && !record.accepted);
}

#[tokio::test]
async fn held_replies_are_forgotten_with_the_send_records() {
    let (store, _guard) = Store::open_in_memory().expect("store");
    let state = AccountState::new(store, "wechat:t");
    hold(&state, reply("a", "old", 1_000)).await.expect("hold");
    hold(&state, reply("a", "new", 9_000)).await.expect("hold");
    let left = state
        .call(|s| {
            purge_in(s, 5_000)?;
            held_in(s)
        })
        .await
        .expect("purge");
    let left: Vec<&str> = left.iter().map(|(_, h)| h.client_id.as_str()).collect();
    assert_eq!(left, ["new"]);
}
