//! The agent as part of health, through a running daemon over its real control socket: the
//! backend built from `[agent]` as `run` builds it, in-memory chat accounts, and the fake
//! OpenAI-compatible server on loopback. Also what one chat message may hand to the agent.

use crate::memory_support;

use std::path::Path;
use std::sync::Arc;

use scv_bridge::adapters::memory::MemoryFactory;
use scv_bridge::agent::{Agent, OpenAiAgent, OpenAiOptions};
use scv_bridge::config::{AccountKey, AgentConfig, Config};
use scv_bridge::conversation::*;
use scv_bridge::daemon::RunningDaemon;
use scv_bridge::protocol::AgentState;
use scv_bridge::store::Store;
use scv_bridge::testing::daemon_status as status;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};

const OWNER: &str = "o9@im.wechat";

fn config_text(dir: &Path, agent: &str) -> String {
    format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[agent]\n{agent}\n[wechat.phone]\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display()
    )
}

/// Starts the daemon wired as `scv-bridge run` wires it: the agent is what `[agent]` builds.
async fn start(dir: &Path, agent: &str) -> (RunningDaemon, Arc<MemoryFactory>, Arc<Conversation>) {
    start_with(dir, agent, |cfg, store| {
        scv_bridge::agent::build(cfg, store)
    })
    .await
}

/// [`start`] with the agent `make` builds from `[agent]` and the store.
async fn start_with(
    dir: &Path,
    agent: &str,
    make: impl FnOnce(&AgentConfig, Store) -> Arc<dyn Agent> + Send + 'static,
) -> (RunningDaemon, Arc<MemoryFactory>, Arc<Conversation>) {
    let path = dir.join("config.toml");
    std::fs::write(&path, config_text(dir, agent)).expect("config");
    let config = Config::load(&path).expect("config");
    let agent_config = config.agent.clone();
    memory_support::start(config, OWNER, move |store| {
        make(&agent_config, store.clone())
    })
    .await
}

fn msg(id: &str, text: &str) -> Inbound {
    Inbound {
        account: AccountKey::parse("wechat:phone").expect("account"),
        chat: ChatId::new(OWNER),
        sender: SenderId::new(OWNER),
        msg_id: PlatformMsgId::new(id),
        text: text.into(),
        at_unix_ms: 0,
        reply: ReplyContext::default(),
        media: Vec::new(),
    }
}

fn unix_now() -> u64 {
    scv_bridge::supervisor::unix_now()
}

#[tokio::test]
async fn an_unset_key_variable_is_not_configured_from_the_start_with_its_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let agent = format!(
        "base_url = \"{}\"\nmodel = \"m\"\napi_key_env = \"SCV_AGENT_HEALTH_SURELY_UNSET\"\n",
        fake.base_url()
    );
    let (d, f, conv) = start(dir.path(), &agent).await;

    // Before any message: status already knows, in the table and in the JSON.
    let s = status(&d).await;
    let a = s.agent.clone().expect("an agent object");
    assert_eq!(a.backend, "openai");
    assert_eq!(a.model.as_deref(), Some("m"));
    assert_eq!(a.state, AgentState::NotConfigured);
    assert_eq!(a.last_success_unix_seconds, None);
    assert_eq!(
        a.error.as_deref(),
        Some(
            "the environment variable SCV_AGENT_HEALTH_SURELY_UNSET (agent.api_key_env) is not set"
        )
    );
    let fix = a.action.clone().expect("a fix");
    assert!(
        fix.contains("`systemctl --user edit scv-bridge`")
            && fix.contains("Environment=SCV_AGENT_HEALTH_SURELY_UNSET=")
            && fix.contains("`systemctl --user restart scv-bridge`"),
        "{fix}"
    );
    let json = serde_json::to_value(&s).expect("json");
    assert_eq!(json["agent"]["state"], "not_configured");
    assert_eq!(json["agent"]["backend"], "openai");
    let table = scv_bridge::cli::status_table(&s, unix_now());
    let line = table
        .lines()
        .find(|l| l.starts_with("agent: "))
        .expect("an agent line");
    assert!(
        line.starts_with("agent: openai (m)  not configured  last success never  the environment variable SCV_AGENT_HEALTH_SURELY_UNSET"),
        "{line}"
    );
    assert!(line.contains("; fix: start the daemon with SCV_AGENT_HEALTH_SURELY_UNSET set"));

    // The owner's message is kept, the owner told why, and the model never called.
    conv.accept(vec![msg("o1", "hello")]).await.expect("accept");
    let ch = f.channel("wechat:phone");
    ch.wait_sent(1).await;
    assert!(
        ch.texts(OWNER)[0].starts_with("The agent is not answering: the agent is not configured: the environment variable SCV_AGENT_HEALTH_SURELY_UNSET"),
        "{:?}",
        ch.texts(OWNER)
    );
    assert_eq!(
        status(&d).await.agent.map(|a| a.state),
        Some(AgentState::NotConfigured)
    );
    assert!(fake.requests().is_empty());
    d.stop().await;
}

#[tokio::test]
async fn no_base_url_is_not_configured_and_a_working_agent_is_ok() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (d, _f, _conv) = start(dir.path(), "model = \"m\"\n").await;
    let a = status(&d).await.agent.expect("agent");
    assert_eq!(a.state, AgentState::NotConfigured);
    assert_eq!(a.error.as_deref(), Some("agent.base_url is not set"));
    assert!(
        a.action
            .as_deref()
            .is_some_and(|f| f.starts_with("set base_url in the [agent] table")),
        "{a:?}"
    );
    d.stop().await;

    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let agent = format!("base_url = \"{}\"\nmodel = \"m\"\n", fake.base_url());
    let (d, f, conv) = start(dir.path(), &agent).await;
    let a = status(&d).await.agent.expect("agent");
    assert_eq!((a.state, a.error, a.action), (AgentState::Ok, None, None));
    let before = unix_now();
    conv.accept(vec![msg("o1", "hi")]).await.expect("accept");
    f.channel("wechat:phone").wait_sent(1).await;
    let a = status(&d).await.agent.expect("agent");
    assert_eq!(a.state, AgentState::Ok);
    assert!(a.last_success_unix_seconds.is_some_and(|t| t >= before));
    d.stop().await;
}

// Paused clock: the pipeline's retry backoff passes without real waiting.
#[tokio::test(start_paused = true)]
async fn a_truncated_stream_event_keeps_the_message_retries_and_status_says_failing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeOpenAi::start().await.expect("fake openai");
    // The first answer breaks off mid-JSON and still ends with [DONE]; the retry is held open
    // so status can be read while the agent is failing.
    fake.push(Reply::truncated_event("Hel"));
    fake.answer_only(Some(1));
    let agent = format!("base_url = \"{}\"\nmodel = \"m\"\n", fake.base_url());
    let (d, f, conv) = start_with(dir.path(), &agent, |cfg, store| {
        let mut opts = OpenAiOptions::configure(cfg).expect("configured");
        // With a paused clock, deadlines would fire while the runtime waits on sockets.
        opts.connect_timeout = None;
        opts.turn_timeout = None;
        Arc::new(OpenAiAgent::new(opts, store).expect("agent"))
    })
    .await;
    conv.accept(vec![msg("o1", "still there?")])
        .await
        .expect("accept");
    let ch = f.channel("wechat:phone");
    ch.wait_sent(1).await;
    assert_eq!(
        ch.texts(OWNER),
        [
            "The agent is not answering: the agent's answer stream did not parse (a broken event). Your message is kept and will be answered when it is back."
        ]
    );
    fake.wait_requests(2).await; // retried

    let s = status(&d).await;
    let a = s.agent.expect("agent");
    assert_eq!(a.state, AgentState::Failing);
    assert_eq!(
        a.error.as_deref(),
        Some("the agent's answer stream did not parse (a broken event)")
    );
    let fix = a.action.expect("a fix");
    assert!(
        fix.starts_with(&format!(
            "check that the model endpoint answers: `curl -sS {}/models`",
            fake.base_url()
        )),
        "{fix}"
    );
    let account = &s.components[0];
    assert!(
        account
            .error
            .as_deref()
            .is_some_and(|e| e.contains("the agent is not answering")),
        "{account:?}"
    );

    fake.answer_only(None);
    ch.wait_sent(2).await;
    assert_eq!(ch.texts(OWNER)[1], "echo: still there?");
    let a = status(&d).await.agent.expect("agent");
    assert_eq!((a.state, a.error), (AgentState::Ok, None));
    assert!(a.last_success_unix_seconds.is_some());
    assert_eq!(ch.sent().len(), 2, "answered once, never 'no text'");
    d.stop().await;
}

/// Sends `text` through a daemon whose `[agent]` adds `extra`; checks the owner's reply is the
/// echo of what the model was handed, after `note` when one is due, and returns what it was handed.
async fn one_message(extra: &str, text: &str, note: Option<&str>) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeOpenAi::start().await.expect("fake openai");
    let agent = format!("base_url = \"{}\"\nmodel = \"m\"\n{extra}", fake.base_url());
    let (d, f, conv) = start(dir.path(), &agent).await;
    conv.accept(vec![msg("big", text)]).await.expect("accept");
    let ch = f.channel("wechat:phone");
    ch.wait_sent(1).await;
    let requests = fake.requests();
    assert_eq!(requests.len(), 1, "the model was asked once");
    let sent = requests[0]
        .messages
        .last()
        .expect("a user message")
        .content
        .clone();
    let reply = match note {
        Some(n) => format!("{n}\n\necho: {sent}"),
        None => format!("echo: {sent}"),
    };
    let pieces = split(&reply, 2000);
    ch.wait_sent(pieces.len()).await;
    assert!(
        ch.texts(OWNER) == pieces,
        "the reply is the note, then the answer"
    );
    d.stop().await;
    sent
}

#[tokio::test]
async fn a_ten_megabyte_message_reaches_the_model_cut_to_the_cap() {
    // The default cap. "你" is three bytes: after one ASCII byte, byte 32768 is inside one.
    let text = format!("a{}", "你".repeat(10 * 1024 * 1024 / 3));
    // The message is Chinese, so under the default `language = "auto"` the note is too.
    let note = "（你的消息有 10.0 MiB，智能体只读取了前 32 KiB。）";
    let sent = one_message("", &text, Some(note)).await;
    assert_eq!(sent.len(), 32767, "cut at the last whole character");
    assert!(text.starts_with(sent.as_str()));

    // The configured cap; an odd prefix puts byte 2048 inside a two-byte character.
    let text = format!("a{}", "é".repeat(5 * 1024 * 1024));
    let note = "(Your message was 10.0 MiB; the agent read only its first 2 KiB.)";
    let sent = one_message("max_message_bytes = 2048\n", &text, Some(note)).await;
    assert_eq!(sent.len(), 2047);
    assert!(text.starts_with(sent.as_str()));

    // What fits reaches the model whole, with no note.
    let fits = "b".repeat(2048);
    let sent = one_message("max_message_bytes = 2048\n", &fits, None).await;
    assert_eq!(sent, fits);
}

#[test]
fn max_message_bytes_is_documented_in_the_example_and_range_checked() {
    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"))
            .expect("example");
    let cfg = Config::parse(Path::new("/etc/scv/config.toml"), &example).expect("parses");
    assert_eq!(cfg.agent.max_message_bytes, Some(32768));
    let at = |v: &str| {
        Config::parse(
            Path::new("/etc/scv/config.toml"),
            &format!("[agent]\nmodel = \"m\"\nmax_message_bytes = {v}\n"),
        )
        .map(|c| c.agent.max_message_bytes)
        .map_err(|e| e.to_string())
    };
    assert_eq!(at("1024"), Ok(Some(1024)));
    assert_eq!(at("4194304"), Ok(Some(4194304)));
    for bad in ["0", "1023", "4194305"] {
        assert_eq!(
            at(bad),
            Err(format!(
                "/etc/scv/config.toml:3: agent.max_message_bytes: expected a whole number of bytes from 1024 to 4194304, found {bad}"
            ))
        );
    }
    assert!(at(&u64::MAX.to_string()).is_err(), "u64::MAX is refused");
}

/// `scv-bridge run` itself, as people start it: the agent it builds is reported before any message.
#[test]
fn the_real_binary_reports_an_unset_key_variable_at_start() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");
    const VAR: &str = "SCV_AGENT_HEALTH_BIN_UNSET";
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.toml");
    let agent = format!(
        "base_url = \"http://127.0.0.1:9/v1\"\nmodel = \"qwen2.5:7b\"\napi_key_env = \"{VAR}\"\n"
    );
    std::fs::write(&path, config_text(dir.path(), &agent)).expect("config");
    let cli = |args: &[&str]| {
        Command::new(BIN)
            .arg("--config")
            .arg(&path)
            .args(args)
            .env_remove("RUST_LOG")
            .output()
            .expect("run the binary")
    };
    let mut daemon = Command::new(BIN)
        .arg("--config")
        .arg(&path)
        .arg("run")
        .env("RUST_LOG", "info")
        .env_remove(VAR)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn daemon");
    // Wait for the daemon's own "running" line: an event, not a timer.
    let mut log = BufReader::new(daemon.stderr.take().expect("stderr"));
    let mut seen = String::new();
    while !seen.contains("scv-bridge is running") {
        let mut line = String::new();
        assert!(
            log.read_line(&mut line).expect("read log") > 0,
            "daemon exited early: {seen}"
        );
        seen.push_str(&line);
    }
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut log, &mut rest);
    });

    let json = cli(&["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json status");
    assert_eq!(status["agent"]["state"], "not_configured", "{status}");
    assert_eq!(status["agent"]["model"], "qwen2.5:7b");
    let table = String::from_utf8_lossy(&cli(&["status"]).stdout).into_owned();
    assert!(
        table.lines().any(|l| l.starts_with(&format!(
            "agent: openai (qwen2.5:7b)  not configured  last success never  the environment variable {VAR} (agent.api_key_env) is not set; fix: start the daemon with {VAR} set"
        ))),
        "{table}"
    );

    // SAFETY: sending a signal to our own child.
    unsafe { libc::kill(daemon.id() as i32, libc::SIGTERM) };
    assert!(daemon.wait().expect("wait").success());
    drain.join().expect("log thread");
}
