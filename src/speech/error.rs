//! What a call to the speech server ended with, classified once: the class decides whether the
//! pipeline tries again later, and the message says what failed and what to do, for status,
//! `doctor` and the owner's note. Never carries audio or a transcript.

use crate::config::command;

/// Why the speech server gave no transcript or no audio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpeechFailure {
    /// No `[speech] base_url`: nothing to ask.
    NotConfigured,
    /// `api_key_env` names a variable that is not set.
    KeyMissing(String),
    /// The server could not be reached or the connection broke.
    Unreachable(String),
    /// No answer within the cap.
    TimedOut(u64),
    /// 401/403: the key is wrong or missing.
    Rejected(String),
    /// 404: the model is not installed on the server (speaches) or the path is wrong.
    UnknownModel(String),
    /// 400/415: the server cannot read this audio (whisper.cpp without `--convert` and Ogg Opus).
    Unreadable(String),
    /// 429: rate limited.
    RateLimited,
    /// 5xx.
    Server(u16),
    /// The audio is over a cap (`max_audio_mb`, `max_audio_seconds`).
    TooLarge(String),
    /// The audio could not be prepared here (a SILK file that does not decode).
    Decode(String),
    /// The answer was not what the API promises.
    Malformed(String),
}

impl SpeechFailure {
    /// Whether the same request may work later unchanged (network, rate limit, 5xx, timeout).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            SpeechFailure::Unreachable(_)
                | SpeechFailure::TimedOut(_)
                | SpeechFailure::RateLimited
                | SpeechFailure::Server(_)
        )
    }

    /// A stable code for status and tests.
    pub fn code(&self) -> &'static str {
        match self {
            SpeechFailure::NotConfigured => "speech.not_configured",
            SpeechFailure::KeyMissing(_) => "speech.key_missing",
            SpeechFailure::Unreachable(_) => "speech.unreachable",
            SpeechFailure::TimedOut(_) => "speech.timeout",
            SpeechFailure::Rejected(_) => "speech.rejected",
            SpeechFailure::UnknownModel(_) => "speech.unknown_model",
            SpeechFailure::Unreadable(_) => "speech.unreadable",
            SpeechFailure::RateLimited => "speech.rate_limited",
            SpeechFailure::Server(_) => "speech.server",
            SpeechFailure::TooLarge(_) => "speech.too_large",
            SpeechFailure::Decode(_) => "speech.decode",
            SpeechFailure::Malformed(_) => "speech.malformed",
        }
    }

    /// What failed, for people.
    pub fn message(&self) -> String {
        match self {
            SpeechFailure::NotConfigured => "no speech server is configured".into(),
            SpeechFailure::KeyMissing(v) => format!("the speech key variable {v} is not set"),
            SpeechFailure::Unreachable(e) => format!("the speech server cannot be reached: {e}"),
            SpeechFailure::TimedOut(s) => format!("the speech server gave no answer within {s} s"),
            SpeechFailure::Rejected(e) => format!("the speech server refused the key: {e}"),
            SpeechFailure::UnknownModel(e) => {
                format!("the speech server does not know the model or path: {e}")
            }
            SpeechFailure::Unreadable(e) => {
                format!("the speech server cannot read this audio: {e}")
            }
            SpeechFailure::RateLimited => "the speech server is rate limiting".into(),
            SpeechFailure::Server(s) => format!("the speech server failed (HTTP {s})"),
            SpeechFailure::TooLarge(e) => format!("the voice note is over a limit: {e}"),
            SpeechFailure::Decode(e) => format!("the voice note cannot be decoded: {e}"),
            SpeechFailure::Malformed(e) => format!("the speech server answered oddly: {e}"),
        }
    }

    /// What to do about it, with a command that works when copied.
    pub fn action(&self) -> String {
        let doctor = command("doctor");
        match self {
            SpeechFailure::NotConfigured => {
                format!(
                    "set [speech] base_url in the configuration, then run `{}`",
                    command("reload")
                )
            }
            SpeechFailure::KeyMissing(v) => {
                format!(
                    "set {v} in the daemon's environment and restart it, or remove [speech] api_key_env"
                )
            }
            SpeechFailure::Unreachable(_) | SpeechFailure::Server(_) => {
                format!("start the speech server or fix [speech] base_url, then run `{doctor}`")
            }
            SpeechFailure::TimedOut(_) => format!(
                "check the speech server's load or raise [speech] timeout_seconds, then run `{doctor}`"
            ),
            SpeechFailure::Rejected(_) => {
                format!(
                    "set a valid key in the variable [speech] api_key_env names, then run `{doctor}`"
                )
            }
            SpeechFailure::UnknownModel(_) => format!(
                "set [speech] model to a model the server has (speaches: an installed model's id), then run `{doctor}`"
            ),
            SpeechFailure::Unreadable(_) => {
                "whisper.cpp: start whisper-server with --convert (needs ffmpeg) to read Ogg Opus"
                    .into()
            }
            SpeechFailure::RateLimited => "nothing: the next voice note tries again".into(),
            SpeechFailure::TooLarge(_) => {
                "raise [speech] max_audio_mb or max_audio_seconds, or send a shorter voice note"
                    .into()
            }
            SpeechFailure::Decode(_) | SpeechFailure::Malformed(_) => {
                format!("run `{doctor}` to check the speech server")
            }
        }
    }
}

impl std::fmt::Display for SpeechFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.message(), self.action())
    }
}

impl std::error::Error for SpeechFailure {}

/// Classifies an HTTP status and the server's error text (already cut and never audio).
pub(super) fn from_status(status: u16, detail: String) -> SpeechFailure {
    match status {
        401 | 403 => SpeechFailure::Rejected(detail),
        404 => SpeechFailure::UnknownModel(detail),
        400 | 413 | 415 | 422 => SpeechFailure::Unreadable(detail),
        429 => SpeechFailure::RateLimited,
        s => SpeechFailure::Server(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified_once_with_what_to_do() {
        assert_eq!(from_status(403, "x".into()).code(), "speech.rejected");
        assert_eq!(from_status(404, "m".into()).code(), "speech.unknown_model");
        assert_eq!(from_status(415, "x".into()).code(), "speech.unreadable");
        assert!(from_status(429, String::new()).is_transient());
        assert!(from_status(503, String::new()).is_transient());
        assert!(!from_status(400, String::new()).is_transient());
        assert!(from_status(415, "x".into()).action().contains("--convert"));
        assert!(
            SpeechFailure::Unreachable("refused".into())
                .action()
                .contains("doctor")
        );
    }
}
