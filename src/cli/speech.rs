//! The speech server's line under the agent's in `status`: omitted when `[speech]` sets no
//! server (voice notes then reach the agent as files, as before).

use crate::protocol::SpeechHealth;

/// `speech: whisper-1  failing  last success never  <error>; fix: <action>`.
pub fn speech_line(speech: Option<&SpeechHealth>, now: u64) -> String {
    let Some(s) = speech.filter(|s| s.state != "not_configured") else {
        return String::new();
    };
    let mut line = format!("speech: {}", s.model.as_deref().unwrap_or("-"));
    match (s.state.as_str(), s.last_success_unix_seconds) {
        ("unused", _) => line.push_str("  untested (no voice note since the daemon started)"),
        (state, last) => line.push_str(&format!(
            "  {state}  last success {}",
            super::ago(last, now)
        )),
    }
    let mut note = Vec::new();
    if let Some(e) = &s.error {
        note.push(e.clone());
    }
    if let Some(fix) = &s.action {
        note.push(format!("fix: {fix}"));
    }
    if !note.is_empty() {
        line.push_str("  ");
        line.push_str(&note.join("; "));
    }
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_speech_server_says_so_with_its_fix() {
        assert_eq!(speech_line(None, 0), "");
        let off = SpeechHealth {
            state: "not_configured".into(),
            ..SpeechHealth::default()
        };
        assert_eq!(speech_line(Some(&off), 0), "");
        let failing = SpeechHealth {
            state: "failing".into(),
            model: Some("whisper-1".into()),
            error: Some("the speech server failed (HTTP 503)".into()),
            action: Some("start the speech server".into()),
            ..SpeechHealth::default()
        };
        let l = speech_line(Some(&failing), 100);
        assert!(l.starts_with("speech: whisper-1  failing"), "{l}");
        assert!(
            l.contains("(HTTP 503); fix: start the speech server"),
            "{l}"
        );
    }
}
