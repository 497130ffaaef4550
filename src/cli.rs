//! Command-line rendering: the status table (each fix also printed as a command to copy) and
//! human durations.

mod speech;

use crate::protocol::{
    AgentHealth, AgentProcesses, AgentState, ComponentHealth, ComponentState, DaemonStatus,
};

/// "42 s", "3 min", "5 h", "2 d".
pub fn human_duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

/// "2 min ago", or "never".
pub fn ago(at: Option<u64>, now: u64) -> String {
    match at {
        None => "never".into(),
        Some(t) if t >= now => "just now".into(),
        Some(t) => format!("{} ago", human_duration(now - t)),
    }
}

/// The NOTE column: the error, the next retry, the fix, and settings changed at run time.
pub fn note(h: &ComponentHealth, now: u64) -> String {
    let mut parts = Vec::new();
    if let Some(e) = &h.error {
        parts.push(e.clone());
    }
    if h.state == ComponentState::Backoff
        && let Some(t) = h.next_retry_unix_seconds
    {
        parts.push(format!(
            "retry in {}",
            human_duration(t.saturating_sub(now))
        ));
    }
    if let Some(a) = &h.action {
        parts.push(format!("fix: {a}"));
    }
    if !h.overrides.is_empty() {
        parts.extend(h.overrides.iter().cloned());
        parts.push(format!(
            "`{}` returns to the file",
            crate::config::command(&format!("channel reset {} {}", h.channel, h.account))
        ));
    }
    parts.join("; ")
}

/// The status table a person reads at a glance.
pub fn status_table(status: &DaemonStatus, now: u64) -> String {
    let mut rows = vec![[
        "ACCOUNT".to_string(),
        "STATE".into(),
        "FOR".into(),
        "RESTARTS".into(),
        "LAST SUCCESS".into(),
        "NOTE".into(),
    ]];
    for h in &status.components {
        rows.push([
            h.id.clone(),
            h.state.as_str().to_string(),
            h.since_unix_seconds
                .map(|s| human_duration(now.saturating_sub(s)))
                .unwrap_or_else(|| "-".into()),
            match h.restarts_last_hour {
                Some(n) if n > 0 => format!("{} ({n} in 1 h)", h.restarts),
                _ => h.restarts.to_string(),
            },
            ago(h.last_success_unix_seconds, now),
            note(h, now),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!("scv-bridge {} (pid {})\n", status.version, status.pid);
    if let Some(w) = status.console.as_ref().and_then(|c| c.warning.as_ref()) {
        out.push_str(&format!("warning: {w}\n"));
    }
    if status.components.is_empty() {
        out.push_str(&format!(
            "no accounts configured; add one to the configuration file and run `{}`\n",
            crate::config::command("reload")
        ));
        out.push_str(&agent_line(status.agent.as_deref(), now));
        out.push_str(&speech::speech_line(status.speech.as_deref(), now));
        out.push_str(&named_agent_lines(status, now));
        return out;
    }
    for r in rows {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate().take(5) {
            line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
        }
        line.push_str(&r[5]);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&agent_line(status.agent.as_deref(), now));
    out.push_str(&speech::speech_line(status.speech.as_deref(), now));
    out.push_str(&named_agent_lines(status, now));
    out.push_str(&deliveries_line(status.deliveries.as_deref(), now));
    out.push_str(&fix_commands(&status.components));
    out
}

/// `status`'s line about the bridge's own messages to the owner; empty when there were none
/// in the last 24 hours and none is open.
pub fn deliveries_line(d: Option<&crate::protocol::DeliveryCounts>, now: u64) -> String {
    let Some(d) = d else {
        return String::new();
    };
    let settled = [
        (d.sent, "sent"),
        (d.unconfirmed, "sent unconfirmed"),
        (d.moved, "moved"),
        (d.failed, "failed"),
    ];
    let open = [(d.queued, "queued"), (d.waiting, "waiting")];
    let part = |xs: &[(u64, &str)]| {
        xs.iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, w)| format!("{n} {w}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (settled, open) = (part(&settled), part(&open));
    if settled.is_empty() && open.is_empty() {
        return String::new();
    }
    let mut line = String::from("to the owner:");
    if !open.is_empty() {
        line.push_str(&format!(" {open}"));
    }
    if !settled.is_empty() {
        let sep = if open.is_empty() { "" } else { ";" };
        line.push_str(&format!("{sep} {settled} in 24 h"));
    }
    if let Some(w) = &d.oldest_waiting {
        line.push_str(&format!(
            "\n  oldest waiting: {} for {}: {}",
            w.route,
            human_duration(now.saturating_sub(w.since_unix_seconds)),
            w.why.words()
        ));
    }
    line.push('\n');
    line
}

/// Under everything, each fix as a command on a line of its own, ready to copy.
/// How often `status --watch` redraws, in seconds.
pub const WATCH_EVERY_SECS: u64 = 2;

/// One `status --watch` screen: cleared, the table from the top, then a last line saying how
/// the screen is redrawn and how to stop, so a reader does not take the blink for a fault.
pub fn watch_frame(status: &DaemonStatus, now: u64) -> String {
    format!(
        "\x1b[2J\x1b[H{}\nRedrawn every {WATCH_EVERY_SECS} s (the screen is cleared each time); \
         Ctrl-C to quit.\n",
        status_table(status, now)
    )
}

fn fix_commands(components: &[ComponentHealth]) -> String {
    let mut out = String::new();
    for h in components {
        if let Some(command) = &h.command {
            out.push_str(&format!("to fix {}, run:\n  {command}\n", h.id));
        }
    }
    out
}

/// Each named agent's line (`[agents.NAME]`) under the default agent's, as [`agent_line`].
fn named_agent_lines(status: &DaemonStatus, now: u64) -> String {
    let rows = status.agents.iter();
    rows.map(|(name, a)| agent_row(&format!("agent {name}"), a, now))
        .collect()
}

/// The agent's one line under the accounts: backend, model, state, last success, error and fix.
pub fn agent_line(agent: Option<&AgentHealth>, now: u64) -> String {
    match agent {
        Some(a) => agent_row("agent", a, now),
        None => String::new(),
    }
}

/// One agent's line, headed `label`.
fn agent_row(label: &str, a: &AgentHealth, now: u64) -> String {
    let mut line = format!("{label}: {}", a.backend);
    if let Some(m) = &a.model {
        line.push_str(&format!(" ({m})"));
    }
    match (a.state, a.last_success_unix_seconds) {
        // "ok" would claim an answer nobody has seen: nothing has been asked of it yet.
        (AgentState::Ok, None) => line.push_str("  untested (no answer since the daemon started)"),
        (state, last) => line.push_str(&format!(
            "  {}  last success {}",
            state.as_str(),
            ago(last, now)
        )),
    }
    let mut note = Vec::new();
    if let Some(e) = &a.error {
        note.push(e.clone());
    }
    if let Some(fix) = &a.action {
        note.push(format!("fix: {fix}"));
    }
    if !note.is_empty() {
        line.push_str("  ");
        line.push_str(&note.join("; "));
    }
    line.push('\n');
    if let Some(p) = &a.processes {
        line.push_str(&processes_line(p));
    }
    line
}

/// The agent processes' line under the agent's: how many run, which agent, its sessions and
/// the last failure (an `acp` backend).
fn processes_line(p: &AgentProcesses) -> String {
    let mut line = format!(
        "  processes: {} running, {} session{}",
        p.running,
        p.sessions,
        if p.sessions == 1 { "" } else { "s" }
    );
    if let Some(agent) = &p.agent {
        line.push_str(&format!("  agent {agent}"));
    }
    if let Some(e) = &p.last_error {
        line.push_str(&format!("  last error: {e}"));
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_frames_clear_redraw_and_say_how_to_quit() {
        let status = DaemonStatus::new("0.1.0", 7);
        let frame = watch_frame(&status, 10_000);
        assert!(frame.starts_with("\x1b[2J\x1b[H"), "{frame:?}");
        assert!(frame.contains(&status_table(&status, 10_000)));
        assert_eq!(
            frame.lines().last(),
            Some("Redrawn every 2 s (the screen is cleared each time); Ctrl-C to quit.")
        );
    }

    #[test]
    fn table_shows_state_age_restarts_success_and_fix() {
        let mut a = ComponentHealth::new("wechat", "phone", true);
        a.state = ComponentState::Failed;
        a.since_unix_seconds = Some(10_000 - 120);
        a.error = Some("session expired".into());
        a.action = Some("run `scv-bridge login wechat phone`".into());
        a.command = Some("scv-bridge login wechat phone".into());
        let mut b = ComponentHealth::new("mail", "work", true);
        b.state = ComponentState::Backoff;
        b.restarts = 3;
        b.restarts_last_hour = Some(2);
        b.since_unix_seconds = Some(9995);
        b.next_retry_unix_seconds = Some(10_042);
        b.last_success_unix_seconds = Some(10_000 - 7200);
        let status = DaemonStatus {
            components: vec![a, b],
            ..DaemonStatus::new("0.1.0", 7)
        };
        let t = status_table(&status, 10_000);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "scv-bridge 0.1.0 (pid 7)");
        let words = |l: &str| {
            l.split("  ")
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            words(lines[1]),
            [
                "ACCOUNT",
                "STATE",
                "FOR",
                "RESTARTS",
                "LAST SUCCESS",
                "NOTE"
            ]
        );
        assert_eq!(
            words(lines[2]),
            [
                "wechat:phone",
                "failed",
                "2 min",
                "0",
                "never",
                "session expired; fix: run `scv-bridge login wechat phone`"
            ]
        );
        assert_eq!(
            words(lines[3]),
            [
                "mail:work",
                "backoff",
                "5 s",
                "3 (2 in 1 h)",
                "2 h ago",
                "retry in 42 s"
            ]
        );
        // Columns line up: every row's STATE starts where the header's does.
        let col = lines[1].find("STATE").expect("header");
        assert_eq!(lines[2].find("failed"), Some(col));
        assert_eq!(lines[3].find("backoff"), Some(col));
        // The fix again, as a line that is nothing but the command.
        assert_eq!(
            &lines[4..],
            [
                "to fix wechat:phone, run:",
                "  scv-bridge login wechat phone"
            ]
        );
    }

    #[test]
    fn run_time_settings_are_shown_with_the_way_back() {
        let mut a = ComponentHealth::new("feishu", "work", true);
        a.state = ComponentState::Connected;
        a.overrides = vec!["remote_tools: owner (set at run time; the file says none)".into()];
        assert_eq!(
            note(&a, 0),
            "remote_tools: owner (set at run time; the file says none); `scv-bridge channel reset feishu work` returns to the file"
        );
        a.overrides.clear();
        assert_eq!(note(&a, 0), "");
    }

    #[test]
    fn the_agent_has_one_line_under_the_accounts() {
        let mut status = DaemonStatus {
            components: vec![ComponentHealth::new("wechat", "phone", true)],
            ..DaemonStatus::new("0.1.0", 7)
        };
        assert!(
            !status_table(&status, 1000).contains("agent:"),
            "no pipeline, no line"
        );
        status.agent = Some(Box::new(AgentHealth {
            backend: "openai".into(),
            model: Some("qwen2.5:7b".into()),
            state: crate::protocol::AgentState::Failing,
            last_success_unix_seconds: Some(1000 - 180),
            error: Some("the agent is unavailable (503 after 3 attempts)".into()),
            action: Some("start it".into()),
            processes: None,
        }));
        let t = status_table(&status, 1000);
        assert_eq!(
            t.lines().last(),
            Some(
                "agent: openai (qwen2.5:7b)  failing  last success 3 min ago  the agent is unavailable (503 after 3 attempts); fix: start it"
            )
        );
        status.components.clear();
        assert!(status_table(&status, 1000).ends_with("fix: start it\n"));
        if let Some(a) = status.agent.as_mut() {
            (a.state, a.last_success_unix_seconds) = (crate::protocol::AgentState::Ok, None);
            (a.error, a.action) = (None, None);
        }
        assert_eq!(
            status_table(&status, 1000).lines().last(),
            Some("agent: openai (qwen2.5:7b)  untested (no answer since the daemon started)"),
            "ok before any answer is untested"
        );
        if let Some(a) = status.agent.as_mut() {
            a.last_success_unix_seconds = Some(1000 - 60);
        }
        assert_eq!(
            status_table(&status, 1000).lines().last(),
            Some("agent: openai (qwen2.5:7b)  ok  last success 1 min ago")
        );
        if let Some(a) = status.agent.as_mut() {
            (a.state, a.last_success_unix_seconds) =
                (crate::protocol::AgentState::Failing, Some(820));
            (a.error, a.action) = (
                Some("the agent is unavailable (503 after 3 attempts)".into()),
                Some("start it".into()),
            );
        }
        if let Some(a) = status.agent.as_mut() {
            a.processes = Some(AgentProcesses {
                running: 1,
                agent: Some("codex-acp 0.16.0".into()),
                sessions: 2,
                last_error: Some("the agent exited (code 1)".into()),
            });
        }
        let t = status_table(&status, 1000);
        assert_eq!(
            t.lines().last(),
            Some(
                "  processes: 1 running, 2 sessions  agent codex-acp 0.16.0  last error: the agent exited (code 1)"
            )
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(42), "42 s");
        assert_eq!(human_duration(150), "2 min");
        assert_eq!(human_duration(7300), "2 h");
        assert_eq!(human_duration(200_000), "2 d");
        assert_eq!(ago(None, 5), "never");
        assert_eq!(ago(Some(5), 5), "just now");
    }
}
