//! The owner tools as function tools (issue 45, item 5): a turn the policy granted them (the
//! verified owner of an account with tools) sends them as `tools`, runs each call the model
//! asks for through the same [`ToolAccess`] the MCP server answers from, hands the results back,
//! and asks again, until the model answers in text. A turn without the grant (a stranger's)
//! sends no `tools` key at all, and nothing it returns is run: there is nothing to run it with.
//!
//! What the chat's history keeps of such a turn is the prompt and the final answer; the calls
//! and results are not remembered (what they did is in the store: `list_scheduled` shows it).

use std::sync::Arc;

use serde_json::Value;
use tracing::info;

use super::body::{self, Rounds};
use super::response::Assembly;
use super::tool_calls::{self, ToolCall};
use super::{CallError, ChatMessage, OpenAiAgent, Reply};
use crate::agent::tool_access::ToolAccess;
use crate::agent::{AgentError, AgentErrorKind, AnswerCap, Usage};

/// The most requests one turn makes to the model: the first, and one after each round of tool
/// calls. A model still calling tools after this many is looping (or being led into a loop by
/// what it read), and every call may reach the owner's phone, so the turn stops there. Eight
/// covers a real chain (list, cancel, schedule, send, then the answer) with room to spare.
pub(super) const MAX_ROUNDS: usize = 8;

impl OpenAiAgent {
    /// The model's answer to `messages` (the last one's content replaced by `parts`); with
    /// `access`, the owner tools offered and run in rounds, each request under the turn timeout.
    pub(super) async fn converse(
        &self,
        messages: &[ChatMessage],
        parts: Option<&Value>,
        cap: &AnswerCap,
        access: Option<&Arc<dyn ToolAccess>>,
    ) -> Result<Reply, CallError> {
        let Some(access) = access else {
            return self
                .within_deadline(self.request_with(messages, parts, cap))
                .await;
        };
        let tools = tool_calls::function_tools(&access.specs());
        let mut after: Vec<Value> = Vec::new();
        let mut ran: Vec<String> = Vec::new();
        let mut usage = Usage::default();
        let mut acc = Assembly::capped(cap);
        for _ in 0..MAX_ROUNDS {
            let rounds = Rounds {
                tools: Some(&tools),
                after: &after,
            };
            let body = body::request_body(&self.opts.model, messages, parts, rounds);
            let round = async {
                let resp = self.post(body, parts.is_some()).await?;
                Ok::<_, CallError>(self.read_stream(resp, acc).await?)
            };
            let mut done = self
                .within_deadline(round)
                .await
                .map_err(|e| after_tools(e, &ran))?;
            let calls = done.take_calls();
            let this = self.usage_or_estimate(done.usage(), messages, done.round_text());
            usage = add(usage, this);
            if calls.is_empty() {
                let (text, files, _) = done.finish().map_err(|e| after_tools(e.into(), &ran))?;
                return Ok((text, files, usage));
            }
            after.push(tool_calls::assistant_message(done.round_text(), &calls));
            for call in &calls {
                let result = run(access.as_ref(), call).await;
                after.push(tool_calls::tool_message(call, &result));
                ran.push(call.name.clone());
            }
            acc = done.next_round();
        }
        Err(after_tools(
            AgentError::new(
                AgentErrorKind::Failed,
                format!("the model was still calling tools after {MAX_ROUNDS} rounds"),
            )
            .into(),
            &ran,
        ))
    }
}

/// Runs one call through the owner tools; what failed is the model's to read and correct.
async fn run(access: &dyn ToolAccess, call: &ToolCall) -> Result<String, String> {
    let result = match tool_calls::arguments(call) {
        Ok(args) => access.call(&call.name, &args).await,
        Err(why) => Err(why),
    };
    // The tool's name only: its arguments and result carry the owner's text.
    info!(tool = %call.name, ok = result.is_ok(), "the model called an owner tool");
    result
}

/// A turn's failure once tools may have acted: before any ran, as it is (the pipeline retries
/// what is worth retrying); after, never retried, since a retry would run the tools again
/// (schedule twice, ask twice), and the owner is told what to check.
fn after_tools(e: CallError, ran: &[String]) -> CallError {
    if ran.is_empty() {
        return e;
    }
    let why = match e {
        CallError::Agent(e) if e.kind == AgentErrorKind::Cancelled => return CallError::Agent(e),
        CallError::Agent(e) => e.message,
        CallError::ContextLength => "the conversation grew past the model's context".into(),
        CallError::NoImages => "the model refused the request's images".into(),
    };
    let mut names = ran.to_vec();
    names.dedup();
    CallError::Agent(AgentError::new(
        AgentErrorKind::Failed,
        format!(
            "{why}, after the model had called {}; not retried, so nothing is done twice: \
             check what was sent or scheduled with `{}`",
            names.join(", "),
            crate::config::command("status")
        ),
    ))
}

fn add(a: Usage, b: Usage) -> Usage {
    Usage {
        prompt_tokens: a.prompt_tokens + b.prompt_tokens,
        completion_tokens: a.completion_tokens + b.completion_tokens,
        total_tokens: a.total_tokens + b.total_tokens,
        estimated: a.estimated || b.estimated,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_after_a_tool_ran_is_not_retried_and_says_what_to_check() {
        let busy = || {
            CallError::Agent(AgentError::new(
                AgentErrorKind::Unavailable,
                "the agent is unavailable (503 after 3 attempts)",
            ))
        };
        let CallError::Agent(before) = after_tools(busy(), &[]) else {
            panic!("an agent error")
        };
        assert_eq!(
            before.kind,
            AgentErrorKind::Unavailable,
            "retried as before"
        );
        let ran = ["schedule".to_string(), "schedule".to_string()];
        let CallError::Agent(e) = after_tools(busy(), &ran) else {
            panic!("an agent error")
        };
        assert_eq!(e.kind, AgentErrorKind::Failed);
        assert!(e.message.contains("503"), "{}", e.message);
        assert!(e.message.contains("called schedule;"), "{}", e.message);
        assert!(e.message.contains("status`"), "{}", e.message);
        let CallError::Agent(e) = after_tools(CallError::ContextLength, &ran) else {
            panic!("an agent error")
        };
        assert_eq!(e.kind, AgentErrorKind::Failed);
        let cancelled = CallError::Agent(AgentError::new(AgentErrorKind::Cancelled, "stop"));
        let CallError::Agent(e) = after_tools(cancelled, &ran) else {
            panic!("an agent error")
        };
        assert_eq!(e.kind, AgentErrorKind::Cancelled);
    }
}
