//! The set-up every real-binary test repeats: a temporary directory holding the state, the
//! socket, the configuration (its first lines common to all) and the daemon's log; logins saved
//! as file credentials; the daemon spawned with its environment; and waits on what the fakes
//! saw, woken by the fakes' changes, that fail with a report instead of hanging.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use scv_bridge::secrets::{CredentialStore, Credentials};

use super::changes::{Changes, first};
use super::{Daemon, read_log};

/// One test's directory, configuration and daemon environment.
pub struct ProcessBed {
    /// Everything the test writes, removed when it ends.
    pub dir: tempfile::TempDir,
    /// The configuration file.
    pub config: PathBuf,
    env: Vec<(String, String)>,
}

impl ProcessBed {
    /// A directory and a configuration: `state_dir`, `socket` and file credentials inside the
    /// directory, then what `rest` writes for it (the `[agent]` and account tables). The daemon
    /// runs with `env` (and `RUST_LOG=info` unless `env` sets it).
    pub fn new(rest: impl FnOnce(&Path) -> String, env: &[(&str, &str)]) -> ProcessBed {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("config.toml");
        let text = format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{}",
            dir.path().join("state").display(),
            dir.path().join("run/daemon.sock").display(),
            rest(dir.path()),
        );
        std::fs::write(&config, text).expect("write the config");
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if !env.iter().any(|(k, _)| k == "RUST_LOG") {
            env.push(("RUST_LOG".into(), "info".into()));
        }
        ProcessBed { dir, config, env }
    }

    /// `rel` inside the directory.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The daemon's state directory.
    pub fn state(&self) -> PathBuf {
        self.path("state")
    }

    /// The daemon's control socket.
    pub fn socket(&self) -> PathBuf {
        self.path("run/daemon.sock")
    }

    /// The daemon's SQLite store.
    pub fn db(&self) -> PathBuf {
        self.path("state/state.db")
    }

    /// Saves `account`'s login where the daemon reads it (`credentials = "file"`).
    pub fn save_login(&self, account: &str, creds: &Credentials) {
        CredentialStore::Files(self.state().join("credentials"))
            .save(account, creds)
            .expect("save the login");
    }

    /// Spawns `scv-bridge run` (every run appends to the one log).
    pub fn spawn(&self) -> Daemon {
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Daemon::spawn(&self.config, &env, &self.path("daemon.log"))
    }

    /// What the daemons logged so far.
    pub fn log(&self) -> String {
        read_log(&self.path("daemon.log"))
    }

    /// Waits until `f` holds, checking it again whenever one of `on` (the sources `f` reads)
    /// changed; after `patience` fails with `report()` (which says what the fakes saw, and the
    /// log when it helps).
    pub async fn wait_until(
        &self,
        patience: Duration,
        what: &str,
        on: &[&dyn Changes],
        report: impl Fn() -> String,
        mut f: impl FnMut() -> bool,
    ) {
        assert!(!on.is_empty(), "waiting for {what} on nothing that changes");
        let ceiling = tokio::time::sleep(patience);
        tokio::pin!(ceiling);
        loop {
            // Armed before the check, so a change between the check and the wait still wakes it.
            let armed = on.iter().map(|c| c.change()).collect();
            if f() {
                return;
            }
            tokio::select! {
                () = first(armed) => {}
                // Failing even when `f` holds by now: then a change went unsignalled, and the
                // wait would have hung but for the ceiling.
                () = &mut ceiling => panic!(
                    "timed out waiting for {what}{}\n{}",
                    if f() { " (it holds, but nothing it reads said it changed)" } else { "" },
                    report()
                ),
            }
        }
    }
}

/// How many rows of `table` (in the SQLite store at `db`) are in each `state`.
pub fn states(db: &Path, table: &str) -> BTreeMap<String, i64> {
    let db = rusqlite::Connection::open(db).expect("open the store");
    let mut stmt = db
        .prepare(&format!(
            "SELECT state, count(*) FROM {table} GROUP BY state"
        ))
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

/// The `[agent]` table of the `openai` backend against `base_url`, its key in `key_env`.
pub fn openai_agent(base_url: &str, model: &str, key_env: &str) -> String {
    format!(
        "[agent]\nbackend = \"openai\"\nbase_url = \"{base_url}\"\nmodel = \"{model}\"\napi_key_env = \"{key_env}\"\n"
    )
}

/// A WeChat login on the fake iLink server, owned by `owner`.
pub fn wechat_login(fake: &scv_wechat::fake::FakeServer, owner: &str) -> Credentials {
    let h = fake.handle();
    let token = h.issue_token();
    Credentials::default()
        .with("bot_token", token.expose())
        .with("bot_id", h.bot_id())
        .with("base_url", fake.base_url())
        .with("owner_id", owner)
}

/// Waits until the WeChat fake accepted a send that `wanted` matches (woken by its changes);
/// after `patience` fails with what it accepted and the daemon's `log`.
pub async fn wait_for_answer(
    h: &scv_wechat::fake::FakeHandle,
    patience: Duration,
    log: &Path,
    wanted: impl Fn(&scv_wechat::fake::SentMessage) -> bool,
) {
    let answer = h.wait_for_sent_where(0, patience, wanted).await;
    assert!(
        answer.is_some(),
        "never answered; sent {:?}; log:\n{}",
        h.sent(),
        read_log(log)
    );
}

/// A Feishu login (app id and secret) the fake accepts.
pub fn feishu_login(fake: &scv_feishu::fake::FakeFeishu) -> Credentials {
    Credentials::default()
        .with("app_id", &fake.config().app_id)
        .with("app_secret", &fake.config().app_secret)
}

/// Every file below `root`, hidden ones included (a leftover partial would show), relative to
/// it and sorted.
pub fn files_below(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.display().to_string());
            }
        }
    }
    out.sort();
    out
}
