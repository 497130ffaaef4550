//! A daemon wired as `scv-bridge run` wires it (confirm service, pipeline, the platforms'
//! factory), its console served on a free loopback port, a WeChat fake behind `[wechat.phone]`,
//! and the helpers the console tests share: the CLI, a plain HTTP client, the login link.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scv_bridge::adapters::{PlatformFactory, PlatformParts};
use scv_bridge::agent::Agent;
use scv_bridge::config::{AgentConfig, Config};
use scv_bridge::confirm::Clock;
use scv_bridge::console::LocalServer;
use scv_bridge::daemon::{self, RunningDaemon, Wiring};
use scv_bridge::protocol::{ComponentState, DaemonCommand};
use scv_bridge::secrets::{AGENT_KEY_ID, API_KEY_FIELD, CredentialStore, Credentials};
use scv_bridge::store::Store;
use scv_bridge::supervisor::{ComponentFactory, HealthRegistry, LifecyclePolicy};
use scv_wechat::fake::{FakeConfig, FakeServer};

/// The owner the fake's scan names.
pub const OWNER: &str = "owner@im.wechat";
/// The account every test uses.
pub const ID: &str = "wechat:phone";
/// The WeChat bot token planted where a logged-in account keeps it.
pub const BOT_TOKEN: &str = "planted-bot-token-7f3a9c";
/// The model key planted where `login agent` keeps it.
pub const MODEL_KEY: &str = "planted-model-key-51d2e8";
/// How long any one wait may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How a test's daemon starts.
pub struct Options {
    /// `console_listen`.
    pub listen: &'static str,
    /// Whether `wechat:phone` starts logged in (with [`BOT_TOKEN`]).
    pub logged_in: bool,
    /// The daemon's clock.
    pub clock: Clock,
    /// Lines added to `[wechat.phone]` (its policy: `approvals = "ask"`, ...).
    pub account_extra: &'static str,
    /// Tables written after `[wechat.phone]` (another account, with its fakes' addresses).
    pub tables: String,
    /// The agent that answers, instead of the one `[agent]` builds.
    pub agent: Option<Arc<dyn Agent>>,
    /// Where the console looks for model servers on this machine (none: a test never probes
    /// the real default ports).
    pub local: Vec<LocalServer>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            listen: "127.0.0.1:0",
            logged_in: false,
            clock: Clock::system(),
            account_extra: "",
            tables: String::new(),
            agent: None,
            local: Vec::new(),
        }
    }
}

/// A running daemon with its console, and the fake WeChat it talks to.
pub struct Bed {
    /// Holds the configuration and state until the test ends.
    _dir: tempfile::TempDir,
    pub fake: FakeServer,
    pub config_path: PathBuf,
    pub daemon: Option<RunningDaemon>,
    /// Where the console listens.
    pub console: SocketAddr,
}

impl Bed {
    /// Starts everything as `options` says.
    pub async fn start(options: Options) -> Bed {
        let initial_token = options.logged_in.then(|| BOT_TOKEN.to_string());
        let fake = FakeServer::start_with(FakeConfig {
            initial_token,
            ..FakeConfig::default()
        })
        .await
        .expect("fake");
        let dir = tempfile::tempdir().expect("tempdir");
        let config_path = dir.path().join("config.toml");
        let text = format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\nconsole_listen = \"{}\"\nnotify = \"{ID}\"\n[agent]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"test-model\"\n[wechat.phone]\nbase_url = \"{}\"\n{}{}",
            dir.path().join("state").display(),
            dir.path().join("run/daemon.sock").display(),
            options.listen,
            fake.base_url(),
            options.account_extra,
            options.tables,
        );
        std::fs::write(&config_path, text).expect("write config");
        let creds = CredentialStore::Files(dir.path().join("state").join("credentials"));
        let key = Credentials::default().with(API_KEY_FIELD, MODEL_KEY);
        creds.save(AGENT_KEY_ID, &key).expect("plant the model key");
        if options.logged_in {
            let login = Credentials::default()
                .with("bot_token", BOT_TOKEN)
                .with("bot_id", fake.handle().bot_id())
                .with("base_url", fake.base_url())
                .with("owner_id", OWNER);
            creds.save(ID, &login).expect("plant the login");
        }
        let config = Config::load(&config_path).expect("config");
        let daemon = daemon::start_with(
            config.clone(),
            wiring(options.clock, config.agent.clone(), options.agent),
            LifecyclePolicy::default(),
        )
        .await
        .expect("daemon starts");
        let listen = config.console_listen.expect("console on");
        let listener = scv_bridge::console::bind(listen).await.expect("bind");
        let console = listener.local_addr().expect("addr");
        scv_bridge::console::start_with(
            daemon.core.clone(),
            config_path.clone(),
            listener,
            daemon.shutdown.clone(),
            options.local,
        );
        Bed {
            _dir: dir,
            fake,
            config_path,
            daemon: Some(daemon),
            console,
        }
    }

    /// The running daemon.
    pub fn daemon(&self) -> &RunningDaemon {
        self.daemon.as_ref().expect("running")
    }

    /// `http://ADDR` of the console, as a browser on this machine reaches it.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.console.port())
    }

    /// Runs `scv-bridge --config FILE ARGS...` to its end.
    pub async fn cli(&self, args: &[&str]) -> std::process::Output {
        self.cli_command(args).output().await.expect("run the CLI")
    }

    /// `scv-bridge --config FILE ARGS...`, not started yet.
    pub fn cli_command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_scv-bridge"));
        cmd.arg("--config").arg(&self.config_path).args(args);
        cmd.kill_on_drop(true);
        cmd
    }

    /// A new one-time login link, as `scv-bridge console` prints it.
    pub async fn link(&self) -> String {
        let out = self.cli(&["console"]).await;
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let link = stdout.lines().next().expect("a link line").to_string();
        assert!(link.starts_with(&self.base()), "{link}");
        link
    }

    /// Waits until the account is in `state`.
    pub async fn wait_state(&self, state: ComponentState) {
        let registry = self.daemon().core.registry();
        within(
            scv_bridge::testing::wait_for_state(&registry, ID, state),
            "the account's state",
        )
        .await;
    }

    /// The status the control socket gives.
    pub async fn status(&self) -> scv_bridge::protocol::DaemonStatus {
        scv_bridge::client::request(&self.daemon().socket, DaemonCommand::Status)
            .await
            .expect("status")
    }

    /// Stops the daemon (and with it the console).
    pub async fn stop(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.stop().await;
        }
    }
}

/// What `scv-bridge run` builds (`app/compose.rs`), on `clock`, with the stored model key.
fn wiring(
    clock: Clock,
    mut agent_config: AgentConfig,
    agent: Option<Arc<dyn Agent>>,
) -> impl FnOnce(&CredentialStore, &Store, &Arc<HealthRegistry>) -> Wiring {
    move |creds, store, registry| {
        agent_config.stored_api_key = creds.agent_key().expect("the stored key");
        let agent = agent.unwrap_or_else(|| scv_bridge::agent::build(&agent_config, store.clone()));
        let (confirm, conversation) =
            daemon::confirm_and_pipeline(store, creds, clock, registry, agent);
        let ctx = PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: conversation.clone(),
            agent: agent_config,
            mail: Default::default(),
        };
        let factory: Arc<dyn ComponentFactory> =
            PlatformFactory::with_answers(ctx, confirm.clone());
        Wiring {
            factory,
            conversation: Some(conversation),
            confirm: Some(confirm),
        }
    }
}

/// Runs `fut`, failing the test if it takes longer than [`PATIENCE`].
pub async fn within<T>(fut: impl Future<Output = T>, what: &str) -> T {
    match tokio::time::timeout(PATIENCE, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// An HTTP client that follows no redirect and keeps no cookie (each test says what it sends).
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// The session cookie (`name=value`) a login answer sets.
pub fn session_cookie(response: &reqwest::Response) -> String {
    let set = response
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("a session cookie");
    set.split(';').next().expect("name=value").to_string()
}

/// Signs in with a new link: the `Cookie` header value and the CSRF token of the page.
pub async fn sign_in(bed: &Bed) -> (String, String) {
    let client = http();
    let answer = client.get(bed.link().await).send().await.expect("login");
    assert_eq!(answer.status(), 303);
    let cookie = session_cookie(&answer);
    let page = client
        .get(format!("{}/", bed.base()))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("body");
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a CSRF token in the page")
        .to_string();
    (cookie, csrf)
}

/// The content type of a form's body.
pub const FORM: &str = "application/x-www-form-urlencoded";

/// `fields` as a form's body (percent-encoded).
pub fn form(fields: &[(&str, String)]) -> String {
    let encode = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}
