//! What the `openai` backend is configured with: the endpoint, model, key and limits, read
//! from `[agent]` with the step that fixes what is wrong.

use std::time::Duration;

use super::history::HistoryLimits;
use super::vision;
use crate::agent::health::{ConfigProblem, DEFAULT_MAX_MESSAGE_BYTES, max_message_bytes};
use crate::agent::key::KeySource;
use crate::config::AgentConfig;
use crate::secrets::Secret;

/// The system prompt when the configuration sets none.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant.";

/// Everything the `openai` backend needs; [`OpenAiOptions::from_config`] fills it from `[agent]`.
#[derive(Debug, Clone)]
pub struct OpenAiOptions {
    /// The API base (e.g. `https://api.openai.com/v1`); `/chat/completions` is appended.
    pub base_url: String,
    /// The model name.
    pub model: String,
    /// The bearer token, if the server needs one.
    pub api_key: Option<Secret>,
    /// Where the key came from, named in the message when the server rejects it.
    pub api_key_env: String,
    /// Where the key came from when not from the variable `api_key_env` (the credential store,
    /// a systemd credential); `None`: from that variable.
    pub key_from: Option<KeySource>,
    /// The system prompt (a line about the reader's channel is appended per turn).
    pub system_prompt: String,
    /// How long establishing a connection may take (`None`: no limit, for paused-clock tests).
    pub connect_timeout: Option<Duration>,
    /// How long the model may take for a turn, retries included (`None`: no limit).
    pub turn_timeout: Option<Duration>,
    /// Attempts per turn for 429 and 5xx answers.
    pub max_tries: u32,
    /// The first backoff when the server names no `Retry-After`; doubled per attempt.
    pub backoff_base: Duration,
    /// A `Retry-After` longer than this is not waited for in the call; the error carries it.
    pub max_retry_wait: Duration,
    /// How much history each chat keeps.
    pub history: HistoryLimits,
    /// The most bytes of one chat message the pipeline hands over (`[agent] max_message_bytes`).
    pub max_message_bytes: usize,
    /// The most bytes of an answer put into the chat (`[agent] max_answer_kib`).
    pub max_answer_bytes: usize,
    /// Whether the model sees images (`[agent] vision`); `None`: try, and remember a refusal.
    pub vision: Option<bool>,
    /// The largest image the model takes inline (`[agent] max_image_mb`); a larger photo is
    /// made smaller to fit.
    pub max_image_bytes: u64,
    /// Whose history this agent keeps (`[agents.NAME]`; `None` for `[agent]`), see
    /// [`crate::agent::SessionKey::scoped`].
    pub scope: Option<String>,
}

impl OpenAiOptions {
    /// Options for `base_url` and `model` with the defaults for everything else and no key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        OpenAiOptions {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            api_key_env: "OPENAI_API_KEY".into(),
            key_from: None,
            system_prompt: DEFAULT_SYSTEM_PROMPT.into(),
            connect_timeout: Some(Duration::from_secs(10)),
            turn_timeout: Some(Duration::from_secs(120)),
            max_tries: 3,
            backoff_base: Duration::from_secs(1),
            max_retry_wait: Duration::from_secs(30),
            history: HistoryLimits::default(),
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_answer_bytes: crate::agent::DEFAULT_MAX_ANSWER_BYTES,
            vision: None,
            max_image_bytes: vision::DEFAULT_MAX_IMAGE_BYTES,
            scope: None,
        }
    }

    /// Reads `[agent]`; the key comes from [`super::key::resolve`].
    pub fn from_config(cfg: &AgentConfig) -> Result<Self, String> {
        OpenAiOptions::configure(cfg).map_err(|p| p.message)
    }

    /// [`OpenAiOptions::from_config`], with the step that fixes what is wrong.
    pub fn configure(cfg: &AgentConfig) -> Result<Self, ConfigProblem> {
        let model = cfg
            .model
            .clone()
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| {
                ConfigProblem::new(
                    "agent.model is required for the openai backend (e.g. \"gpt-4o-mini\")",
                    "set model = \"...\" in the [agent] table of the configuration file to a model \
                     the endpoint lists, then restart the daemon",
                )
            })?;
        // No default endpoint: a bridge that quietly calls a cloud API it was never pointed at
        // fails late and confusingly; doctor and mail triage need base_url too.
        let base_url = cfg
            .base_url
            .clone()
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| {
                ConfigProblem::new(
                    "agent.base_url is not set",
                    "set base_url in the [agent] table of the configuration file (e.g. \
                     \"http://127.0.0.1:11434/v1\" for Ollama, \"https://api.openai.com/v1\"), \
                     then restart the daemon",
                )
            })?;
        let mut o = OpenAiOptions::new(base_url, model);
        if let Some(key) = crate::agent::key::resolve(cfg)? {
            match key.source {
                KeySource::Variable(name) => o.api_key_env = name,
                other => o.key_from = Some(other),
            }
            o.api_key = Some(key.secret);
        }
        if let Some(p) = cfg.system_prompt.as_ref().filter(|p| !p.trim().is_empty()) {
            o.system_prompt = p.clone();
        }
        if let Some(s) = cfg.timeout_seconds.filter(|s| *s > 0) {
            o.turn_timeout = Some(Duration::from_secs(s));
        }
        o.max_message_bytes = max_message_bytes(cfg);
        o.max_answer_bytes = crate::agent::answer::max_answer_bytes(cfg);
        o.vision = cfg.vision;
        o.scope = cfg.scope.clone();
        if let Some(mb) = cfg.max_image_mb {
            o.max_image_bytes = mb * 1024 * 1024;
        }
        Ok(o)
    }
}

impl OpenAiOptions {
    /// Where the key came from, for messages about it.
    pub(super) fn key_source(&self) -> KeySource {
        self.key_from
            .clone()
            .unwrap_or_else(|| KeySource::Variable(self.api_key_env.clone()))
    }
}
