//! The real ACP agents as the tests start them: where `.ci/run` installed them, the command,
//! arguments and environment that point each at a local fake model, and the trial that runs a
//! test of them or reports it ignored, with the reason, when this run has none.

#![allow(dead_code)]

use std::future::Future;
use std::path::{Path, PathBuf};

use libtest_mimic::{Completion, Failed, Trial};
use scv_bridge::testing::fake_models::FakeModels;

/// Why a real-agent test did not run, as the test count shows it.
pub const NO_AGENTS: &str = "SCV_ACP_AGENTS is not set: the real agents are not installed (.ci/run installs them and sets it)";

/// The agents' directory (`SCV_ACP_AGENTS`), or `None` when this run does not test them.
pub fn agents_dir() -> Option<PathBuf> {
    std::env::var_os("SCV_ACP_AGENTS")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// A test of the real agents in `dir`, run on a two-thread runtime; without `dir` it counts as
/// ignored with [`NO_AGENTS`] (never as passed, never silently). A panic in `body` fails it.
pub fn agent_trial<F, Fut>(name: &str, dir: Option<PathBuf>, body: F) -> Trial
where
    F: FnOnce(PathBuf) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    Trial::ignorable_test(name, move || {
        let Some(dir) = dir else {
            return Ok(Completion::ignored_with(NO_AGENTS));
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Failed::from(format!("cannot start a runtime: {e}")))?;
        runtime.block_on(body(dir));
        Ok(Completion::Completed)
    })
}

fn need(path: &Path) {
    assert!(
        path.exists(),
        "{} is missing: run `.ci/run` (it installs @zed-industries/codex-acp@0.16.0 and \
         @zed-industries/claude-agent-acp@0.23.1 with npm)",
        path.display()
    );
}

/// How to start one real agent: its program, arguments and environment. `secret_env` is what
/// a person keeps out of the configuration file (the API key), given to the daemon's own
/// environment instead.
pub struct AgentCmd {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub secret_env: Vec<(String, String)>,
}

impl AgentCmd {
    /// The `[agent]` table that starts it (`backend = "acp"`).
    pub fn agent_table(&self) -> String {
        let args: Vec<String> = self.args.iter().map(|a| format!("{a:?}")).collect();
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k} = {v:?}"))
            .collect();
        format!(
            "[agent]\nbackend = \"acp\"\ncommand = {:?}\nargs = [{}]\nenv = {{ {} }}\ntimeout_seconds = 180\n",
            self.program,
            args.join(", "),
            env.join(", ")
        )
    }
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// codex-acp with its own `CODEX_HOME` naming the fake Responses API; it asks before commands.
pub fn codex(dir: &Path, home: &Path, models: &FakeModels) -> AgentCmd {
    let bin = dir.join("node_modules/.bin/codex-acp");
    need(&bin);
    let config = format!(
        r#"model = "fake-model"
model_provider = "fake"
approval_policy = "untrusted"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
[model_providers.fake]
name = "Fake local model"
base_url = "{}/v1"
wire_api = "responses"
env_key = "FAKE_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000
[analytics]
enabled = false
"#,
        models.base_url()
    );
    std::fs::create_dir_all(home).expect("codex home");
    std::fs::write(home.join("config.toml"), config).expect("codex config");
    AgentCmd {
        program: s(&bin),
        args: Vec::new(),
        env: vec![("CODEX_HOME".into(), s(home))],
        secret_env: vec![("FAKE_MODEL_KEY".into(), "sk-fake".into())],
    }
}

/// claude-agent-acp run by node, with the fake Messages API as its base URL.
pub fn claude(dir: &Path, home: &Path, models: &FakeModels) -> AgentCmd {
    let js = dir.join("node_modules/@zed-industries/claude-agent-acp/dist/index.js");
    need(&js);
    std::fs::create_dir_all(home.join(".claude")).expect("claude home");
    AgentCmd {
        program: "node".into(),
        args: vec![s(&js)],
        env: vec![
            ("HOME".into(), s(home)),
            ("CLAUDE_CONFIG_DIR".into(), s(&home.join(".claude"))),
            ("IS_SANDBOX".into(), "1".into()),
            ("ANTHROPIC_BASE_URL".into(), models.base_url()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
            ("DISABLE_TELEMETRY".into(), "1".into()),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
        ],
        secret_env: vec![("ANTHROPIC_API_KEY".into(), "sk-ant-fake".into())],
    }
}
