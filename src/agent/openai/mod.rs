//! The `openai` backend: OpenAI-compatible streaming chat completions with per-chat history.
//!
//! Each turn sends the system prompt, the chat's bounded history and the new text with
//! `stream: true`, assembles the streamed deltas, and stores the exchange only once it is answered,
//! so a failed turn retried by the pipeline is not remembered twice.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::health::{AgentInfo, Fixes};
use super::{
    Agent, AgentError, AgentErrorKind, AnswerCap, Keep, SessionKey, TurnOutput, TurnRequest, Usage,
};
use crate::config::AgentConfig;
use crate::store::Store;
use crate::words::Lang;

mod body;
pub mod history;
mod options;
mod response;
mod shrink;
pub mod sse;
mod tool_calls;
mod tools;
mod vision;

use body::Rounds;
use history::{Exchange, HistoryLimits};
pub use response::estimate_tokens;
use response::{
    Assembly, ServerUsage, error_detail, is_context_length, retry_after, short_message, without_url,
};
use sse::SseParser;

pub use options::{DEFAULT_SYSTEM_PROMPT, OpenAiOptions};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The person.
    User,
    /// The model.
    Assistant,
}

/// One message of a chat completion request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message from `role`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
        }
    }
}

/// The most bytes of a completion nobody reads in a chat (mail triage) kept in memory.
const MAX_COMPLETION_BYTES: usize = 4 << 20;

/// A completion: the text, the file holding what passed the chat's cap, and the usage.
type Reply = (String, Vec<PathBuf>, Usage);

/// An OpenAI-compatible chat completions backend with per-chat history in the store.
pub struct OpenAiAgent {
    opts: OpenAiOptions,
    url: String,
    client: reqwest::Client,
    store: Store,
    said_estimating: AtomicBool,
}

/// How one request failed: an error for the caller, or a context overflow the turn can fix.
enum CallError {
    Agent(AgentError),
    ContextLength,
    /// A 400 saying the model takes no images (only when the request carried some).
    NoImages,
}

impl From<AgentError> for CallError {
    fn from(e: AgentError) -> Self {
        CallError::Agent(e)
    }
}

impl OpenAiAgent {
    /// A backend with `opts`, keeping history in `store`.
    pub fn new(opts: OpenAiOptions, store: Store) -> Result<Self, String> {
        let mut builder = reqwest::Client::builder();
        if let Some(t) = opts.connect_timeout {
            builder = builder.connect_timeout(t);
        }
        let client = builder
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let url = format!("{}/chat/completions", opts.base_url.trim_end_matches('/'));
        Ok(OpenAiAgent {
            opts,
            url,
            client,
            store,
            said_estimating: AtomicBool::new(false),
        })
    }

    /// A backend from `[agent]`.
    pub fn from_config(cfg: &AgentConfig, store: Store) -> Result<Self, String> {
        OpenAiAgent::new(OpenAiOptions::from_config(cfg)?, store)
    }

    /// The options in use.
    pub fn options(&self) -> &OpenAiOptions {
        &self.opts
    }

    /// One completion of `messages` without history (mail triage), retried like a turn.
    pub async fn complete(&self, messages: &[ChatMessage]) -> Result<(String, Usage), AgentError> {
        let call = async {
            // Bounded in memory, never cut in practice: a triage answer is small JSON.
            let cap = AnswerCap::quiet(MAX_COMPLETION_BYTES);
            match self.request(messages, &cap).await {
                Ok((text, _, usage)) => Ok((text, usage)),
                Err(CallError::Agent(e)) => Err(e),
                Err(CallError::ContextLength) => Err(AgentError::new(
                    AgentErrorKind::Failed,
                    "the text is too long for the model's context",
                )),
                Err(CallError::NoImages) => Err(AgentError::new(
                    AgentErrorKind::Failed,
                    "the model takes no images",
                )),
            }
        };
        self.within_deadline(call).await
    }

    fn timed_out(&self) -> AgentError {
        AgentError::new(
            AgentErrorKind::Unavailable,
            format!(
                "the agent did not answer within {} s",
                self.opts.turn_timeout.unwrap_or_default().as_secs_f64()
            ),
        )
    }

    /// Runs `work` under the turn timeout, when there is one.
    async fn within_deadline<T, E: From<AgentError>>(
        &self,
        work: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        match self.opts.turn_timeout {
            Some(limit) => tokio::time::timeout(limit, work)
                .await
                .unwrap_or_else(|_| Err(self.timed_out().into())),
            None => work.await,
        }
    }

    fn system_message(&self, channel_label: &str, language: Lang) -> ChatMessage {
        let mut text = self.opts.system_prompt.clone();
        if !channel_label.is_empty() {
            text.push_str(&format!(
                "\n\nThe reader is on {channel_label} and sees short plain text on a phone: \
                 answer briefly, without Markdown tables, headings or code fences unless asked."
            ));
            // The model is told in English (the prompt's language) which language to answer in.
            text.push_str(match language {
                Lang::En => " The reader writes English: answer in English.",
                Lang::ZhCn => {
                    " The reader writes Simplified Chinese: answer in Simplified Chinese (简体中文)."
                }
            });
        }
        ChatMessage::new(Role::System, text)
    }

    async fn run_turn(&self, req: TurnRequest) -> Result<TurnOutput, AgentError> {
        let limits = self.opts.history;
        let mut past = history::load(
            &self.store,
            &req.session.scoped(self.opts.scope.as_deref()),
            limits,
        )
        .await
        .map_err(|e| AgentError::new(AgentErrorKind::Failed, e.to_string()))?;
        let system = self.system_message(req.channel_label, req.language);
        let mut trimmed = false;
        // Only a turn with pictures needs to know (a store read fewer for every text turn).
        let mut images = !req.attachments.is_empty() && self.sees_images(&req.session).await;
        // Read (and shrink) once: a retry after a context overflow sends the same parts.
        let prepared = if images && !req.attachments.is_empty() {
            vision::prepare(&req.attachments, self.opts.max_image_bytes).await
        } else {
            Vec::new()
        };
        loop {
            let seen = (images && !req.attachments.is_empty()).then_some(&prepared[..]);
            let (prompt, parts) = vision::user_content(&req.prompt, &req.attachments, seen);
            let mut messages = Vec::with_capacity(past.len() * 2 + 2);
            messages.push(system.clone());
            for e in &past {
                messages.push(ChatMessage::new(Role::User, e.user.clone()));
                messages.push(ChatMessage::new(Role::Assistant, e.assistant.clone()));
            }
            messages.push(ChatMessage::new(Role::User, prompt.clone()));
            // The deadline covers each request to the model, not the local store (so a paused
            // test clock never jumps to it while the store thread works) nor a tool's run.
            let cap = AnswerCap::for_turn(&req, self.opts.max_answer_bytes);
            let access = req.owner_tools.as_ref().filter(|_| !req.no_tools);
            let answer = self.converse(&messages, parts.as_ref(), &cap, access).await;
            match answer {
                Ok((text, files, usage)) => {
                    let keep = HistoryLimits {
                        // After a context overflow, keep no more than what fitted.
                        max_turns: if trimmed {
                            limits.max_turns.min(past.len() + 1)
                        } else {
                            limits.max_turns
                        },
                        ..limits
                    };
                    let exchange = Exchange {
                        user: prompt,
                        assistant: text.clone(),
                    };
                    // Stored with the answer, in its transaction.
                    let write = history::append(
                        &req.session.scoped(self.opts.scope.as_deref()),
                        exchange,
                        keep,
                        usage,
                    );
                    return Ok(TurnOutput {
                        text,
                        usage: Some(usage),
                        files,
                        keep: Keep::new(self.store.clone(), write),
                    });
                }
                Err(CallError::ContextLength) if !trimmed && !past.is_empty() => {
                    let drop = past.len().div_ceil(2);
                    info!(session = %req.session.parent(), dropped = drop, "context too long; dropping the older history and retrying once");
                    past.drain(..drop);
                    trimmed = true;
                }
                Err(CallError::ContextLength) => {
                    return Err(AgentError::new(
                        AgentErrorKind::Failed,
                        "the message is too long for the model's context",
                    ));
                }
                Err(CallError::NoImages) if images => {
                    info!(session = %req.session.parent(), "the model takes no images; remembered, sending the saved paths");
                    let account = req.session.account.to_string();
                    if let Err(e) =
                        vision::remember_no_images(&self.store, &account, &self.opts.model).await
                    {
                        warn!(error = %e, "could not remember that the model takes no images");
                    }
                    images = false;
                }
                Err(CallError::NoImages) => {
                    return Err(AgentError::new(
                        AgentErrorKind::Failed,
                        "the model refused the request's images",
                    ));
                }
                Err(CallError::Agent(e)) => return Err(e),
            }
        }
    }

    /// Whether this turn sends images inline: `[agent] vision`, else what the store remembers
    /// (a refusal), else yes.
    async fn sees_images(&self, session: &SessionKey) -> bool {
        if let Some(v) = self.opts.vision {
            return v;
        }
        let account = session.account.to_string();
        match vision::remembered(&self.store, &account, &self.opts.model).await {
            Ok(known) => known != Some(false),
            Err(_) => true,
        }
    }

    /// Sends `messages`, retrying 429 and 5xx a bounded number of times, and assembles the stream.
    async fn request(&self, messages: &[ChatMessage], cap: &AnswerCap) -> Result<Reply, CallError> {
        self.request_with(messages, None, cap).await
    }

    /// [`Self::request`], the last message's content replaced by `parts` (text and images).
    async fn request_with(
        &self,
        messages: &[ChatMessage],
        parts: Option<&serde_json::Value>,
        cap: &AnswerCap,
    ) -> Result<Reply, CallError> {
        let body = body::request_body(&self.opts.model, messages, parts, Rounds::default());
        let resp = self.post(body, parts.is_some()).await?;
        let (text, files, usage) = self
            .read_stream(resp, Assembly::capped(cap))
            .await?
            .finish()?;
        let usage = self.usage_or_estimate(usage, messages, &text);
        Ok((text, files, usage))
    }

    /// Posts `body` (which carries images when `images`), retrying 429 and 5xx a bounded number
    /// of times; the answer's stream once the server accepted it. Every status is classified
    /// here, once.
    async fn post(&self, body: bytes::Bytes, images: bool) -> Result<reqwest::Response, CallError> {
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut rb = self
                .client
                .post(&self.url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone());
            if let Some(key) = &self.opts.api_key {
                rb = rb.bearer_auth(key.expose());
            }
            let resp = rb.send().await.map_err(|e| {
                AgentError::new(
                    AgentErrorKind::Unavailable,
                    format!("cannot reach the agent: {}", without_url(&e)),
                )
            })?;
            let status = resp.status();
            if status.is_success() {
                return Ok(resp);
            }
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                return Err(AgentError::new(
                    AgentErrorKind::Auth,
                    format!(
                        "the agent rejected the API key ({}); check {}",
                        status.as_u16(),
                        self.opts.key_source().describe()
                    ),
                )
                .into());
            }
            let transient = status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error();
            let retry_after = retry_after(resp.headers());
            let detail = error_detail(resp).await;
            if !transient {
                if status == StatusCode::BAD_REQUEST && is_context_length(&detail) {
                    return Err(CallError::ContextLength);
                }
                if status == StatusCode::BAD_REQUEST && images && vision::refuses_images(&detail) {
                    return Err(CallError::NoImages);
                }
                return Err(AgentError::new(
                    AgentErrorKind::Failed,
                    format!(
                        "the agent refused the request ({}): {}",
                        status.as_u16(),
                        short_message(&detail)
                    ),
                )
                .into());
            }
            let wait = retry_after.unwrap_or_else(|| {
                self.opts.backoff_base * 2u32.saturating_pow(attempt.saturating_sub(1))
            });
            if attempt >= self.opts.max_tries || wait > self.opts.max_retry_wait {
                let mut e = AgentError::new(
                    AgentErrorKind::Unavailable,
                    format!(
                        "the agent is unavailable ({} after {attempt} attempts)",
                        status.as_u16()
                    ),
                );
                e.retry_after = retry_after;
                return Err(e.into());
            }
            warn!(
                status = status.as_u16(),
                attempt,
                wait_ms = wait.as_millis() as u64,
                "the agent asked us to retry"
            );
            tokio::time::sleep(wait).await;
        }
    }

    /// Reads the answer's stream into `acc` to its end.
    async fn read_stream(
        &self,
        resp: reqwest::Response,
        mut acc: Assembly,
    ) -> Result<Assembly, AgentError> {
        let broken = |what: String| AgentError::new(AgentErrorKind::Unavailable, what);
        let mut stream = resp.bytes_stream();
        let mut parser = SseParser::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk
                .map_err(|e| broken(format!("the agent's stream broke: {}", without_url(&e))))?;
            let payloads = parser
                .feed(&chunk)
                .map_err(|_| broken("the agent sent an oversized event".into()))?;
            for p in payloads {
                if acc.event(&p)? {
                    return Ok(acc);
                }
            }
        }
        if let Some(p) = parser.finish() {
            acc.event(&p)?;
        }
        if !acc.finished {
            return Err(broken(
                "the agent's stream ended before the answer did".into(),
            ));
        }
        Ok(acc)
    }

    fn usage_or_estimate(
        &self,
        reported: Option<ServerUsage>,
        messages: &[ChatMessage],
        answer: &str,
    ) -> Usage {
        if let Some(u) = reported {
            return Usage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
                total_tokens: u
                    .total_tokens
                    .unwrap_or(u.prompt_tokens + u.completion_tokens),
                estimated: false,
            };
        }
        if !self.said_estimating.swap(true, Ordering::Relaxed) {
            info!(model = %self.opts.model, "the agent reports no token usage; estimating from text length");
        }
        let prompt = messages
            .iter()
            .map(|m| estimate_tokens(&m.content) + 4)
            .sum::<u64>();
        let completion = estimate_tokens(answer);
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            estimated: true,
        }
    }
}

impl Agent for OpenAiAgent {
    fn turn(
        &self,
        req: TurnRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        Box::pin(async move {
            let session = req.session.parent();
            let out = tokio::select! {
                biased;
                _ = cancel.cancelled() => Err(AgentError::new(AgentErrorKind::Cancelled, "the turn was cancelled")),
                r = self.run_turn(req) => r,
            };
            match &out {
                Ok(o) => debug!(%session, chars = o.text.chars().count(), "openai turn answered"),
                Err(e) => info!(%session, kind = ?e.kind, error = %e, "openai turn failed"),
            }
            out
        })
    }

    fn describe(&self) -> AgentInfo {
        let o = &self.opts;
        let base = o.base_url.trim_end_matches('/');
        let check = if o.key_from.is_some() {
            // No variable holds such a key; doctor asks the endpoint with it.
            format!("`{}`", crate::config::command("doctor"))
        } else {
            let auth = if o.api_key.is_some() {
                format!(" -H \"Authorization: Bearer ${}\"", o.api_key_env)
            } else {
                String::new()
            };
            format!("`curl -sS{auth} {base}/models`")
        };
        let mut info = AgentInfo::new("openai");
        info.model = Some(o.model.clone());
        info.max_message_bytes = o.max_message_bytes;
        info.fixes = Fixes {
            unavailable: Some(format!(
                "check that the model endpoint answers: {check}; kept messages are retried on their own"
            )),
            auth: Some(format!(
                "{}; check the key with {check}",
                o.key_source().fix()
            )),
            failed: Some(format!(
                "check agent.model and agent.base_url against {check}; the next message is tried again"
            )),
        };
        info
    }

    fn reset<'a>(&'a self, session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async move {
            history::clear(&self.store, &session.scoped(self.opts.scope.as_deref()))
                .await
                .map_err(|e| AgentError::new(AgentErrorKind::Failed, e.to_string()))
        })
    }
}
