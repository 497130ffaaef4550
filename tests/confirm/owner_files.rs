//! `scv-bridge send --file` over the daemon's real control socket: files inside an account's
//! workspace reach the owner behind the text, through the outbox and its states; a file
//! outside, or over `[media] max_item_mb`, is refused with the command that fixes it; a
//! scheduled file survives a restart and goes once. The clock is hand-moved; nothing sleeps but
//! the command's own short polls.

use crate::confirm_support as support;
use crate::owner_send::{SAT_NOON_MS, start_with};

use std::path::{Path, PathBuf};
use std::time::Duration;

use scv_bridge::agent::MediaKind;
use scv_bridge::client;
use scv_bridge::conversation::Body;
use scv_bridge::owner::cli::{self, Options, Outcome};
use scv_bridge::protocol::*;
use support::*;

/// The account's table: its workspace, and a 1 MB cap on each file.
fn account(ws: &Path) -> String {
    format!(
        "workspace = \"{}\"\n[media]\nmax_item_mb = 1\n",
        ws.display()
    )
}

fn opts(text: &str, files: Vec<PathBuf>, in_seconds: Option<u64>) -> Options {
    Options {
        text: text.into(),
        files,
        to: None,
        at: None,
        in_seconds,
        wait: in_seconds.is_none(),
        poll_every: Duration::from_millis(10),
    }
}

fn media(b: &Body) -> Option<(String, MediaKind)> {
    match b {
        Body::Media(m) => Some((m.name.clone(), m.kind)),
        _ => None,
    }
}

#[tokio::test]
async fn files_go_behind_the_text_and_refusals_say_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("chart.png"), b"\x89PNG\r\n\x1a\n").expect("write");
    std::fs::write(ws.join("notes.txt"), b"notes").expect("write");
    let t = start_with(dir.path(), true, SAT_NOON_MS, &account(&ws)).await;

    let o = opts(
        "Tonight's numbers",
        vec![ws.join("chart.png"), ws.join("notes.txt")],
        None,
    );
    let sent = within(cli::run(&t.d.socket, &o, std::future::pending())).await;
    let Outcome::Done(info) = &sent else {
        panic!("{sent:?}")
    };
    assert_eq!(info.state, SendState::Sent, "{info:?}");
    assert_eq!(sent.exit_code(), 0);
    within(t.channel.wait_sent(3)).await;
    let sent = t.channel.sent();
    assert_eq!(sent[0].text, "Tonight's numbers");
    let files: Vec<_> = sent.iter().filter_map(|o| media(&o.body)).collect();
    assert_eq!(
        files,
        vec![
            ("chart.png".to_string(), MediaKind::Image),
            ("notes.txt".to_string(), MediaKind::File)
        ]
    );
    assert!(sent.iter().all(|o| o.chat.as_str() == OWNER));

    // A file alone, no text.
    let o = opts("", vec![ws.join("notes.txt")], None);
    let alone = within(cli::run(&t.d.socket, &o, std::future::pending())).await;
    assert_eq!(alone.exit_code(), 0, "{alone:?}");
    within(t.channel.wait_sent(4)).await;
    assert!(media(&t.channel.sent()[3].body).is_some());

    // Outside the workspaces, missing, over the cap: refused before anything is stored.
    let outside = dir.path().join("secret.txt");
    std::fs::write(&outside, b"s").expect("write");
    std::fs::write(ws.join("big.bin"), vec![0u8; 2 * 1024 * 1024]).expect("write");
    for (file, words) in [
        (outside, vec!["outside", "cp ", "send --file"]),
        (ws.join("gone.pdf"), vec!["no such file"]),
        (ws.join("big.bin"), vec!["max_item_mb"]),
    ] {
        let o = opts("x", vec![file.clone()], None);
        let refused = within(cli::run(&t.d.socket, &o, std::future::pending())).await;
        match &refused {
            Outcome::Error(e) => {
                assert!(words.iter().all(|w| e.contains(w)), "{file:?}: {e}")
            }
            other => panic!("{file:?}: expected a refusal, got {other:?}"),
        }
        assert_eq!(refused.exit_code(), 2);
    }
    within(t.conv.quiescent()).await;
    assert_eq!(t.channel.sent().len(), 4, "nothing refused went out");
    t.d.stop().await;
}

#[tokio::test]
async fn a_scheduled_file_survives_a_restart_and_goes_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("report.pdf"), b"%PDF-1.4").expect("write");
    let t = start_with(dir.path(), true, SAT_NOON_MS, &account(&ws)).await;
    let o = opts("The report", vec![ws.join("report.pdf")], Some(3600));
    let later = within(cli::run(&t.d.socket, &o, std::future::pending())).await;
    let Outcome::Done(info) = later else {
        panic!("{later:?}")
    };
    assert_eq!(info.state, SendState::Scheduled);
    t.d.stop().await;

    let t = start_with(dir.path(), true, SAT_NOON_MS, &account(&ws)).await;
    t.at(SAT_NOON_MS + 3_599_000).await;
    assert!(t.channel.sent().is_empty(), "not before its time");
    t.at(SAT_NOON_MS + 3_600_000).await;
    within(t.channel.wait_sent(2)).await;
    let bodies = t.channel.bodies();
    assert_eq!(
        bodies.iter().filter_map(media).collect::<Vec<_>>(),
        vec![("report.pdf".to_string(), MediaKind::File)]
    );
    let s = client::request(&t.d.socket, DaemonCommand::SendStatus { id: info.id })
        .await
        .expect("send_status")
        .send
        .expect("send");
    assert_eq!(s.state, SendState::Sent);
    t.d.stop().await;

    let t = start_with(dir.path(), true, SAT_NOON_MS + 7_200_000, &account(&ws)).await;
    t.at(SAT_NOON_MS + 7_200_001).await;
    assert!(t.channel.sent().is_empty(), "a restart sends nothing twice");
    t.d.stop().await;
}
