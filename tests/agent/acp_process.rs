//! The `acp` backend's real child process: a shell script speaking just enough ACP, with a
//! grandchild in its process group. A death mid-turn carries its stderr tail; the whole group is
//! killed on close, and a group a killed bridge left behind is killed by the next start.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use scv_bridge::agent::acp::CommandLauncher;
use scv_bridge::agent::{
    AcpAgent, AcpOptions, Agent, AgentErrorKind, SessionKey, TurnEvents, TurnRequest,
};
use scv_bridge::config::{AccountKey, Channel};
use scv_bridge::conversation::ChatId;
use tokio_util::sync::CancellationToken;

/// Starts `sleep 600` in its group (its pid in $PIDFILE), answers initialize and session/new,
/// then per $MODE: `die` writes to stderr and exits on the prompt; `answer` answers it and then,
/// like codex-acp, ignores stdin EOF.
const SCRIPT: &str = r#"#!/bin/sh
sleep 600 &
echo $! > "$PIDFILE"
read line
printf '%s\n' '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"sh-agent","version":"1"}}}'
read line
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}'
read line
if [ "$MODE" = die ]; then
  echo "fatal: the model went away" >&2
  exit 3
fi
printf '%s\n' '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"ok"}}}}'
printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
while :; do read line || sleep 600; done
"#;

fn agent(dir: &Path, mode: &str, record: Option<PathBuf>) -> Arc<AcpAgent> {
    let script = dir.join("agent.sh");
    std::fs::write(&script, SCRIPT).unwrap();
    let launcher = CommandLauncher {
        program: "sh".into(),
        args: vec![script.to_string_lossy().into_owned()],
        env: vec![
            ("MODE".into(), mode.into()),
            (
                "PIDFILE".into(),
                dir.join("sleep.pid").to_string_lossy().into_owned(),
            ),
        ],
        record_dir: record,
    };
    Arc::new(AcpAgent::new(AcpOptions::new(Arc::new(launcher)), None))
}

fn req() -> TurnRequest {
    TurnRequest {
        session: SessionKey {
            account: AccountKey::new(Channel::Wechat, "phone"),
            chat: ChatId::new("c1"),
        },
        prompt: "hi".into(),
        no_tools: false,
        auto_approve: false,
        approver: None,
        workspace: Some(std::env::temp_dir()),
        channel_label: "WeChat",
        language: Default::default(),
        attachments: Vec::new(),
        events: TurnEvents::none(),
        owner_tools: None,
    }
}

fn sleeper(dir: &Path) -> i32 {
    std::fs::read_to_string(dir.join("sleep.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Alive and not a zombie (a killed orphan may stay `<defunct>` under a container's PID 1).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..]
                .split_whitespace()
                .next();
            state != Some("Z")
        }
        Err(_) => false,
    }
}

/// Waits for `pid` to end, on an event: a pidfd (Linux 5.3+) turns readable when its process
/// exits, child of ours or not. A process already reaped has nothing left to wait for.
async fn dies(pid: i32) {
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
    match tokio::time::timeout(std::time::Duration::from_secs(5), watch.readable()).await {
        Ok(ready) => drop(ready.expect("pidfd readable")),
        Err(_) => panic!("process {pid} is still alive"),
    }
}

#[tokio::test]
async fn a_death_mid_turn_fails_with_the_stderr_tail_and_its_group_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent(dir.path(), "die", None);
    let err = match a.turn(req(), CancellationToken::new()).await {
        Ok(_) => panic!("answered"),
        Err(e) => e,
    };
    assert_eq!(err.kind, AgentErrorKind::Ended);
    assert!(
        err.message
            .contains("(it exited: exit status: 3): fatal: the model went away"),
        "{}",
        err.message
    );
    dies(sleeper(dir.path())).await;
}

#[tokio::test]
async fn close_kills_the_whole_group_of_an_agent_that_ignores_stdin_eof() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent(dir.path(), "answer", None);
    let out = a
        .turn(req(), CancellationToken::new())
        .await
        .expect("answer");
    assert_eq!(out.text, "ok");
    let pid = sleeper(dir.path());
    assert!(alive(pid));
    a.close().await;
    dies(pid).await;
}

#[tokio::test]
async fn the_next_start_kills_a_group_a_killed_bridge_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let first = agent(dir.path(), "answer", Some(state.clone()));
    first
        .turn(req(), CancellationToken::new())
        .await
        .expect("answer");
    let orphan = sleeper(dir.path());
    assert!(state.join("acp-wechat-phone.pgid").exists());
    // kill -9 of the bridge: nothing of it runs its cleanup.
    std::mem::forget(first);
    assert!(alive(orphan));
    let second = agent(dir.path(), "answer", Some(state));
    second
        .turn(req(), CancellationToken::new())
        .await
        .expect("answer");
    dies(orphan).await;
    second.close().await;
}
