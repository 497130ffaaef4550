//! `kill -9` of the real daemon never leaves its ACP agent running: the agent (a shell script
//! speaking just enough ACP, with a grandchild `sleep` in its process group, as codex-acp's node
//! wrapper has its native child) dies with the daemon (the parent-death signal), and the
//! grandchild, which that signal does not reach, dies when the daemon starts again (the group
//! recorded in the state directory is killed at start, before any message).

use crate::process_support;

use std::path::Path;
use std::time::Duration;

use process_support::bed::{ProcessBed, wait_for_answer, wechat_login};
use process_support::sigkill;
use scv_wechat::fake::FakeServer;

const OWNER: &str = "owner@im.wechat";

/// Writes its own pid and its grandchild's into $PIDDIR, answers initialize, session/new and
/// one prompt, then, like codex-acp, ignores stdin EOF.
const SCRIPT: &str = r#"#!/bin/sh
sleep 600 &
echo $! > "$PIDDIR/grandchild.pid"
echo $$ > "$PIDDIR/agent.pid"
read line
printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"sh-agent","version":"1"}}}'
read line
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}'
read line
printf '%s\n' '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ok"}}}}'
printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
while :; do read line || sleep 600; done
"#;

fn pid(dir: &Path, name: &str) -> i32 {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .trim()
        .parse()
        .expect("a pid")
}

/// Waits for `pid` to end, on an event: a pidfd (Linux 5.3+) turns readable when its process
/// exits, child of ours or not; `patience` bounds the wait only when it never comes.
async fn dies(pid: i32, what: &str, patience: Duration) {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new descriptor or -1; no
    // memory is shared.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if raw < 0 {
        let err = std::io::Error::last_os_error();
        assert_eq!(
            err.raw_os_error(),
            Some(libc::ESRCH),
            "pidfd_open({pid}): {err}"
        );
        return;
    }
    // SAFETY: `raw` is a descriptor pidfd_open just returned and nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
    // SAFETY: the descriptor is owned by the AsyncFd for as long as it is registered, and
    // closed only when it drops (`register_with_interest`'s I/O-safety contract).
    let watch = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    }
    .unwrap_or_else(|e| panic!("watch the pidfd: {e}"));
    match tokio::time::timeout(patience, watch.readable()).await {
        Ok(ready) => drop(ready.expect("pidfd readable")),
        Err(_) => panic!("the {what} (pid {pid}) is still alive"),
    }
}

/// Kills `pid` if it still runs, so a failing test leaves nothing behind.
fn cleanup(pid: i32) {
    // SAFETY: kill(2) on a pid this test's agent wrote; no memory is shared.
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_daemon_takes_the_agent_at_once_and_its_grandchild_at_the_next_start() {
    let fake = FakeServer::start().await.expect("fake ilink");
    let pids = tempfile::tempdir().expect("pid dir");
    let script = pids.path().join("agent.sh");
    std::fs::write(&script, SCRIPT).expect("script");
    let bed = ProcessBed::new(
        |_| {
            format!(
                "[agent]\nbackend = \"acp\"\ncommand = \"sh\"\nargs = [{:?}]\nenv = {{ PIDDIR = {:?} }}\n\
                 [wechat.phone]\nbase_url = \"{}\"\n",
                script.display().to_string(),
                pids.path().display().to_string(),
                fake.base_url(),
            )
        },
        &[],
    );
    bed.save_login("wechat:phone", &wechat_login(&fake, OWNER));
    let mut daemon = bed.spawn();
    let h = fake.handle();
    h.push_text(OWNER, "hello");
    let log = bed.path("daemon.log");
    wait_for_answer(&h, Duration::from_secs(60), &log, |m| {
        m.to_user == OWNER && m.text == "ok"
    })
    .await;
    let (agent, grandchild) = (
        pid(pids.path(), "agent.pid"),
        pid(pids.path(), "grandchild.pid"),
    );

    sigkill(&mut daemon);
    // The agent itself goes with the daemon.
    dies(agent, "agent", Duration::from_secs(10)).await;

    // Its grandchild goes when the daemon starts again, before anyone writes.
    let mut again = bed.spawn();
    dies(grandchild, "agent's grandchild", Duration::from_secs(30)).await;
    cleanup(agent);
    cleanup(grandchild);
    // Started no agent of its own: nothing to stop gently.
    sigkill(&mut again);
    assert!(
        bed.log()
            .contains("killing an agent process group left by an earlier run"),
        "{}",
        bed.log()
    );
}
