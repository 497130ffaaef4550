//! One prompt turn on an open session: the answer chunks streamed, tool calls as throttled status
//! lines, permission requests answered by the policy (asking without stalling the updates), and
//! `/stop` answering pending permissions `cancelled` before `session/cancel`.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

use super::permission::{self, PermOption};
use super::rpc::Inbound;
use super::rpc::RpcError;
use super::session::{Proc, ended, failed};
use crate::agent::approval::Decision;
use crate::agent::{
    AgentError, AgentErrorKind, Answer, AnswerCap, MediaKind, TurnOutput, TurnRequest, Usage,
};
use crate::words::Msg;

/// The shortest gap between two status lines, so a burst of tool calls is not a burst of edits.
pub const STATUS_GAP: Duration = Duration::from_secs(5);
/// The largest image sent inline; a larger one is named by its path.
const MAX_IMAGE_BYTES: u64 = 10 << 20;

/// The told-to-the-agent line of a session without tools.
pub const NO_TOOLS_NOTE: &str = "You have no tools in this conversation: do not run commands, \
edit files or ask for permission; answer in text only.";

/// What a turn needs besides the request.
pub struct Turn<'a> {
    /// The agent process.
    pub proc: &'a Proc,
    /// The session id.
    pub sid: &'a str,
    /// After `session/cancel`, how long to wait for the agent to end the turn.
    pub cancel_grace: Duration,
    /// How long a permission question may wait for the owner before it is a refusal.
    pub approval_timeout: Duration,
    /// Offer "always" when the agent offers it (no account allows it yet: false by default).
    pub offer_always: bool,
    /// The turn ends when the agent sends nothing for this long (`[agent] timeout_seconds`),
    /// the time an owner's approval is awaited not counted; `None`: no limit.
    pub idle: Option<Duration>,
    /// The most bytes of the answer put into the chat; the rest goes to a workspace file.
    pub max_answer: usize,
}

struct Call {
    title: String,
    announced: bool,
}

/// Runs the turn to its end.
pub async fn run(
    t: Turn<'_>,
    req: &TurnRequest,
    cancel: &CancellationToken,
) -> Result<TurnOutput, AgentError> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    t.proc.rpc.route(t.sid, tx);
    let out = drive(&t, req, cancel, &mut rx).await;
    t.proc.rpc.unroute(t.sid);
    // Whatever is still queued (a permission that raced the end) gets a definite answer.
    while let Ok(inb) = rx.try_recv() {
        if let Inbound::Permission { id, .. } = inb {
            t.proc.rpc.respond(&id, permission::cancelled());
        }
    }
    out
}

async fn drive(
    t: &Turn<'_>,
    req: &TurnRequest,
    cancel: &CancellationToken,
    rx: &mut mpsc::UnboundedReceiver<Inbound>,
) -> Result<TurnOutput, AgentError> {
    let params = json!({"sessionId": t.sid, "prompt": prompt(t.proc, req).await});
    let prompt = t.proc.rpc.request("session/prompt", params);
    tokio::pin!(prompt);
    let (decided_tx, mut decided_rx) = mpsc::unbounded_channel::<(String, Value)>();
    // Permission requests being decided: their id (as a JSON string key) and the original id.
    let mut asking: HashMap<String, (Value, CancellationToken)> = HashMap::new();
    let asks = CancellationToken::new();
    let _stop_asking = asks.clone().drop_guard();
    let mut text = AnswerCap::for_turn(req, t.max_answer).start();
    let mut calls: HashMap<String, Call> = HashMap::new();
    let mut last_status: Option<Instant> = None;
    let mut refused = false;
    let mut grace: Option<Instant> = None;
    let heard = || t.idle.map(|d| Instant::now() + d);
    // When the agent's silence ends the turn; moved on by everything it sends.
    let mut quiet_until = heard();
    let mut went_quiet = false;
    let result = loop {
        tokio::select! {
            r = &mut prompt => break r,
            Some(inb) = rx.recv() => { quiet_until = heard(); match inb {
                Inbound::Update(u) => on_update(&u, req, &mut text, &mut calls, &mut last_status),
                Inbound::Permission { id, params } => {
                    if grace.is_some() {
                        t.proc.rpc.respond(&id, permission::cancelled());
                        continue;
                    }
                    let opts = permission::options(&params);
                    match policy(req) {
                        Some(d) => {
                            refused |= d == Decision::Reject;
                            t.proc.rpc.respond(&id, permission::outcome(&opts, d));
                        }
                        None => {
                            let token = asks.child_token();
                            asking.insert(id.to_string(), (id.clone(), token.clone()));
                            ask(t, req, &params, opts, id, token, decided_tx.clone());
                        }
                    }
                }
            }},
            Some((key, outcome)) = decided_rx.recv() => {
                // The owner's time is not the agent's: its silence counts from the answer.
                quiet_until = heard();
                // Gone from `asking` when /stop already answered it `cancelled`.
                if let Some((id, _)) = asking.remove(&key) {
                    refused |= outcome.get("refused").is_some();
                    let answer = outcome.get("answer").cloned().unwrap_or_else(permission::cancelled);
                    t.proc.rpc.respond(&id, answer);
                }
            }
            _ = cancel.cancelled(), if grace.is_none() => {
                // Pending permissions first (the spec's order), then the cancel itself.
                for (_, (id, token)) in asking.drain() {
                    token.cancel();
                    t.proc.rpc.respond(&id, permission::cancelled());
                }
                t.proc.rpc.notify("session/cancel", json!({"sessionId": t.sid}));
                grace = Some(Instant::now() + t.cancel_grace);
            }
            _ = sleep_until(quiet_until), if quiet_until.is_some() && asking.is_empty() && grace.is_none() => {
                info!(idle_s = t.idle.unwrap_or_default().as_secs(), "the agent sent nothing for the idle timeout; cancelling its turn");
                went_quiet = true;
                t.proc.rpc.notify("session/cancel", json!({"sessionId": t.sid}));
                grace = Some(Instant::now() + t.cancel_grace);
            }
            _ = sleep_until(grace), if grace.is_some() => {
                info!("the agent did not end a cancelled turn in time");
                if went_quiet {
                    // Hung for good: the next turn gets a new process.
                    t.proc.stop();
                    return Err(silent(t));
                }
                return Err(cancelled());
            }
        }
    };
    if went_quiet {
        return Err(silent(t));
    }
    // The reader routes in wire order: every update sent before the prompt's answer is queued.
    while let Ok(inb) = rx.try_recv() {
        match inb {
            Inbound::Update(u) => on_update(&u, req, &mut text, &mut calls, &mut last_status),
            Inbound::Permission { id, .. } => t.proc.rpc.respond(&id, permission::cancelled()),
        }
    }
    let result = match result {
        Ok(r) => r,
        Err(RpcError::Closed) => {
            // The process ended while answering: its last words and exit status first.
            t.proc.tail.settled().await;
            return Err(ended(t.proc));
        }
        Err(e) => return Err(failed(t.proc, "during the turn", e)),
    };
    if grace.is_some() {
        return Err(cancelled());
    }
    answer(req, &result, text, refused)
}

/// The turn's output from the prompt's result: the answer, or the note that it stopped after a
/// refused tool call, or the agent's refusal to answer.
fn answer(
    req: &TurnRequest,
    result: &Value,
    text: Answer,
    refused: bool,
) -> Result<TurnOutput, AgentError> {
    let stop = result["stopReason"].as_str().unwrap_or("end_turn");
    debug!(stop, bytes = text.text().len(), "ACP turn ended");
    let said = !text.text().trim().is_empty();
    let (mut text, files) = text.finish();
    if stop == "cancelled" || (refused && !said) {
        // Codex ends the whole turn on a rejection: say so, not "denied, continuing".
        let note = Msg::AgentStoppedAfterNo.text(req.language).into_owned();
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        req.events.text(&note);
        text.push_str(&note);
    } else if stop == "refusal" && !said {
        return Err(AgentError::new(
            AgentErrorKind::Failed,
            "the agent refused to answer",
        ));
    }
    Ok(TurnOutput {
        text,
        usage: usage(result),
        files,
        ..Default::default()
    })
}

/// The error of a turn the agent went silent in for the idle timeout.
fn silent(t: &Turn<'_>) -> AgentError {
    AgentError::new(
        AgentErrorKind::Ended,
        format!(
            "the agent sent nothing for {} s",
            t.idle.unwrap_or_default().as_secs()
        ),
    )
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The decision the policy makes without asking, or `None` when the owner is asked.
fn policy(req: &TurnRequest) -> Option<Decision> {
    if req.no_tools {
        Some(Decision::Reject)
    } else if req.auto_approve {
        Some(Decision::AllowOnce)
    } else if req.approver.is_none() {
        Some(Decision::Reject)
    } else {
        None
    }
}

/// Asks the owner in its own task, so updates keep flowing; the answer comes back on `done`.
fn ask(
    t: &Turn<'_>,
    req: &TurnRequest,
    params: &Value,
    opts: Vec<PermOption>,
    id: Value,
    token: CancellationToken,
    done: mpsc::UnboundedSender<(String, Value)>,
) {
    let Some(approver) = req.approver.clone() else {
        return;
    };
    let question = permission::request(&req.session, params);
    let offer_always = t.offer_always && permission::offers(&opts, "allow_always");
    let timeout = t.approval_timeout;
    let events = req.events.clone();
    let expired = Msg::AgentStoppedAfterNo.text(req.language).into_owned();
    tokio::spawn(async move {
        let decided = approver.decide(question, offer_always, token.clone());
        let decision = tokio::select! {
            d = decided => d,
            _ = tokio::time::sleep(timeout) => {
                token.cancel();
                events.status(expired);
                Decision::Reject
            }
        };
        let mut v = json!({"answer": permission::outcome(&opts, decision)});
        if decision == Decision::Reject {
            v["refused"] = json!(true);
        }
        let _ = done.send((id.to_string(), v));
    });
}

fn on_update(
    u: &Value,
    req: &TurnRequest,
    text: &mut Answer,
    calls: &mut HashMap<String, Call>,
    last_status: &mut Option<Instant>,
) {
    match u["sessionUpdate"].as_str().unwrap_or("") {
        "agent_message_chunk" => {
            if u["content"]["type"] == "text"
                && let Some(piece) = u["content"]["text"].as_str()
            {
                // Streamed by the answer, up to the chat's cap.
                text.push(piece);
            }
        }
        "tool_call" | "tool_call_update" => {
            let Some(id) = u["toolCallId"].as_str() else {
                return;
            };
            let call = calls.entry(id.to_string()).or_insert(Call {
                title: String::new(),
                announced: false,
            });
            if let Some(title) = u["title"].as_str().filter(|s| !s.is_empty()) {
                call.title = one_line(title, 60);
            }
            let status = u["status"].as_str().unwrap_or("");
            let line = match status {
                "completed" => "done".to_string(),
                "failed" => match exit_code(&u["rawOutput"]) {
                    Some(code) => format!("failed: exit {code}"),
                    None => "failed".to_string(),
                },
                _ if call.title.is_empty() => return,
                _ => format!("running: {}", call.title),
            };
            let now = Instant::now();
            let quiet = last_status.is_none_or(|at| now >= at + STATUS_GAP);
            // At most one line per call, and none closer than STATUS_GAP to the last.
            if !call.announced && quiet {
                call.announced = true;
                *last_status = Some(now);
                req.events.status(line);
            }
        }
        // Thoughts, plans, replayed user text, modes: never sent to a phone.
        _ => {}
    }
}

fn exit_code(raw: &Value) -> Option<i64> {
    // Unconfirmed field names (codex `exit_code`, others `exitCode`); none means no code shown.
    raw.get("exit_code")
        .or_else(|| raw.get("exitCode"))
        .and_then(Value::as_i64)
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let flat = flat.trim();
    if flat.chars().count() <= max {
        return flat.to_string();
    }
    let mut out: String = flat.chars().take(max - 1).collect();
    out.push('…');
    out
}

fn usage(result: &Value) -> Option<Usage> {
    let u = result.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (p, c) = (n("inputTokens"), n("outputTokens"));
    Some(Usage {
        prompt_tokens: p,
        completion_tokens: c,
        total_tokens: u
            .get("totalTokens")
            .and_then(Value::as_u64)
            .unwrap_or(p + c),
        estimated: false,
    })
}

/// The prompt's content blocks: the no-tools note, the text, then the attachments (images inline
/// only when the agent takes them, else a line naming the file).
async fn prompt(proc: &Proc, req: &TurnRequest) -> Vec<Value> {
    let mut blocks = Vec::new();
    if req.no_tools {
        blocks.push(json!({"type": "text", "text": NO_TOOLS_NOTE}));
    }
    blocks.push(json!({"type": "text", "text": req.prompt}));
    for a in &req.attachments {
        let path = a.path.to_string_lossy().into_owned();
        if a.kind == MediaKind::Image && proc.facts.image {
            let small = tokio::fs::metadata(&a.path)
                .await
                .is_ok_and(|m| m.len() <= MAX_IMAGE_BYTES);
            if small && let Ok(bytes) = tokio::fs::read(&a.path).await {
                let mime = a.mime.clone().unwrap_or_else(|| "image/png".into());
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                blocks.push(json!({"type": "image", "data": data, "mimeType": mime}));
                continue;
            }
        }
        blocks.push(json!({"type": "text", "text": format!("Attached file: {path}")}));
    }
    blocks
}

/// The error of a turn `/stop` (or shutdown) cancelled.
pub fn cancelled() -> AgentError {
    AgentError::new(AgentErrorKind::Cancelled, "the turn was cancelled")
}
