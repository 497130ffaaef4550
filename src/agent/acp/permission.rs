//! Answering `session/request_permission`: the policy's decision turned into the option of the
//! right KIND. Never by position or name: codex offers `[allow_once, allow_always, reject_once]`,
//! claude `[allow_always, allow_once, reject_once]`, so "the first allow" grants *always* there.

use serde_json::{Value, json};

use crate::agent::SessionKey;
use crate::agent::approval::{ApprovalRequest, Decision};

/// One offered option: its id and kind, as the agent sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermOption {
    /// The id to answer with.
    pub id: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// The options of a request's params.
pub fn options(params: &Value) -> Vec<PermOption> {
    params
        .get("options")
        .and_then(Value::as_array)
        .map(|opts| {
            opts.iter()
                .filter_map(|o| {
                    Some(PermOption {
                        id: o.get("optionId")?.as_str()?.to_string(),
                        kind: o.get("kind")?.as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// True when the agent offers an option of `kind`.
pub fn offers(opts: &[PermOption], kind: &str) -> bool {
    opts.iter().any(|o| o.kind == kind)
}

/// The answer to a request for `decision`: the option of that kind; a refusal is `reject_once`,
/// else `reject_always`, else `cancelled` (no made-up id). An allow the agent does not offer in
/// that kind is a refusal: `Allow` never widens to `allow_always`.
pub fn outcome(opts: &[PermOption], decision: Decision) -> Value {
    let wanted: &[&str] = match decision {
        Decision::AllowOnce => &["allow_once"],
        Decision::AllowAlways => &["allow_always"],
        Decision::Reject => &[],
    };
    let pick = |kind: &str| opts.iter().find(|o| o.kind == kind);
    let chosen = wanted
        .iter()
        .find_map(|k| pick(k))
        .or_else(|| pick("reject_once"))
        .or_else(|| pick("reject_always"));
    match chosen {
        Some(o) => json!({"outcome": {"outcome": "selected", "optionId": o.id}}),
        None => cancelled(),
    }
}

/// The answer for a cancelled turn.
pub fn cancelled() -> Value {
    json!({"outcome": {"outcome": "cancelled"}})
}

/// The question for the owner: the tool call's title (codex and claude put the command line
/// there), its kind, and codex's `rawInput.cwd` when given.
pub fn request(session: &SessionKey, params: &Value) -> ApprovalRequest {
    let call = params.get("toolCall").unwrap_or(&Value::Null);
    let title = call.get("title").and_then(Value::as_str).unwrap_or("");
    let raw = call.get("rawInput").unwrap_or(&Value::Null);
    let command = match raw.get("command") {
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" "),
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    let mut summary = String::new();
    if !command.is_empty() && command != title {
        summary.push_str(&command);
    }
    if let Some(cwd) = raw.get("cwd").and_then(Value::as_str) {
        if !summary.is_empty() {
            summary.push('\n');
        }
        summary.push_str("in ");
        summary.push_str(cwd);
    }
    ApprovalRequest {
        session: session.clone(),
        tool: if title.is_empty() {
            command
        } else {
            title.to_string()
        },
        summary,
        risk: call.get("kind").and_then(Value::as_str).map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude() -> Vec<PermOption> {
        let p = json!({"options": [
            {"optionId": "allow_always", "name": "Always", "kind": "allow_always"},
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]});
        options(&p)
    }

    #[test]
    fn options_are_chosen_by_kind_never_by_position() {
        let o = claude();
        let id = |v: Value| v["outcome"]["optionId"].as_str().unwrap_or("-").to_string();
        assert_eq!(id(outcome(&o, Decision::AllowOnce)), "allow");
        assert_eq!(id(outcome(&o, Decision::AllowAlways)), "allow_always");
        assert_eq!(id(outcome(&o, Decision::Reject)), "reject");
        let only_always = vec![o[0].clone()];
        assert_eq!(
            outcome(&only_always, Decision::AllowOnce),
            cancelled(),
            "an allow-once is never widened to always, nor an id made up"
        );
        let reject_always = vec![PermOption {
            id: "never".into(),
            kind: "reject_always".into(),
        }];
        assert_eq!(id(outcome(&reject_always, Decision::Reject)), "never");
    }
}
