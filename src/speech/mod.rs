//! Speech: voice notes into text and answers into voice, through an OpenAI-compatible server
//! (`POST /audio/transcriptions`, `POST /audio/speech`; OpenAI, speaches, whisper.cpp's server).
//!
//! Made once from `[speech]` by the daemon (`Speech::from_config`) and handed to the pipeline,
//! which transcribes a voice note before its turn and speaks the first part of an answer when
//! the chat wants voice. Audio leaves the workspace only to the configured server; transcripts
//! are message text and never logged. Every failure is a [`SpeechFailure`], classified once,
//! with what to do; the last outcome is the status row (`Speech::health`).

mod audio;
mod client;
mod error;
mod silk;
mod speak;

use std::sync::Mutex;
use std::time::Duration;

pub use audio::{Format, Upload, opus_duration_ms, sniff, wav};
pub use error::SpeechFailure;
pub use speak::{Spoken, spoken_part};

#[cfg(all(feature = "silk", any(test, feature = "testing")))]
pub use silk::encode_wechat as encode_silk_for_tests;

use crate::config::SpeechConfig;
use crate::protocol::SpeechHealth;
use crate::secret::Secret;

/// `[speech]` with its defaults filled in and its key read.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The base URL without a trailing slash (`.../v1`).
    pub base_url: String,
    /// The transcription model.
    pub model: String,
    /// Sent with every transcription when set.
    pub language: Option<String>,
    /// The cap on one transcription.
    pub timeout: Duration,
    /// The largest audio sent, in bytes.
    pub max_bytes: u64,
    /// The longest audio sent, in seconds.
    pub max_seconds: u64,
    /// The text-to-speech model.
    pub tts_model: String,
    /// The voice of answers.
    pub voice: String,
    /// How much of an answer is spoken, in characters.
    pub voice_max_chars: usize,
    /// The bearer key, when one is set.
    key: Option<Secret>,
}

impl Settings {
    /// The settings `cfg` gives, reading the key variable it names; `None` when no server is set.
    pub fn from_config(cfg: &SpeechConfig) -> Result<Option<Settings>, SpeechFailure> {
        Settings::with_env(cfg, |v| std::env::var(v).ok())
    }

    /// [`Settings::from_config`] with the environment given, for tests.
    pub fn with_env(
        cfg: &SpeechConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, SpeechFailure> {
        let Some(base) = cfg.base_url.as_deref().filter(|u| !u.trim().is_empty()) else {
            return Ok(None);
        };
        let key = match cfg.api_key_env.as_deref() {
            None => None,
            Some(v) => Some(Secret::new(
                env(v)
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| SpeechFailure::KeyMissing(v.into()))?,
            )),
        };
        const MB: u64 = 1024 * 1024;
        Ok(Some(Settings {
            base_url: base.trim().trim_end_matches('/').to_string(),
            model: cfg.model.clone().unwrap_or_else(|| "whisper-1".into()),
            language: cfg.language.clone().filter(|l| !l.trim().is_empty()),
            timeout: Duration::from_secs(cfg.timeout_seconds.unwrap_or(120)),
            max_bytes: cfg.max_audio_mb.unwrap_or(25) * MB,
            max_seconds: cfg.max_audio_seconds.unwrap_or(600),
            tts_model: cfg.tts_model.clone().unwrap_or_else(|| "tts-1".into()),
            voice: cfg.voice.clone().unwrap_or_else(|| "alloy".into()),
            voice_max_chars: usize::try_from(cfg.voice_max_chars.unwrap_or(600)).unwrap_or(600),
            key,
        }))
    }
}

/// The last outcome of a call, for status.
#[derive(Debug, Default)]
struct Outcome {
    last_success: Option<u64>,
    failing: Option<SpeechFailure>,
}

/// The speech server as the pipeline uses it. Cheap to share (`Arc`).
pub struct Speech {
    /// `Err`: configured but unusable (a key variable that is not set), said by every call.
    settings: Result<Settings, SpeechFailure>,
    http: reqwest::Client,
    outcome: Mutex<Outcome>,
}

impl Speech {
    /// The speech server `cfg` names; `None` when `[speech]` sets no `base_url`.
    pub fn from_config(cfg: &SpeechConfig) -> Option<Speech> {
        match Settings::from_config(cfg) {
            Ok(None) => None,
            Ok(Some(s)) => Some(Speech::new(Ok(s))),
            Err(e) => Some(Speech::new(Err(e))),
        }
    }

    /// A speech client over `settings`.
    pub fn with_settings(settings: Settings) -> Speech {
        Speech::new(Ok(settings))
    }

    fn new(settings: Result<Settings, SpeechFailure>) -> Speech {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .unwrap_or_default();
        Speech {
            settings,
            http,
            outcome: Mutex::new(Outcome::default()),
        }
    }

    /// The settings, or why there are none usable.
    pub fn settings(&self) -> Result<&Settings, SpeechFailure> {
        self.settings.as_ref().map_err(Clone::clone)
    }

    /// Records a call's outcome for status.
    fn record<T>(&self, r: &Result<T, SpeechFailure>) {
        if let Ok(mut o) = self.outcome.lock() {
            match r {
                Ok(_) => {
                    o.last_success = Some(crate::supervisor::unix_now());
                    o.failing = None;
                }
                // A voice note over a cap says nothing about the server.
                Err(SpeechFailure::TooLarge(_) | SpeechFailure::Decode(_)) => {}
                Err(e) => o.failing = Some(e.clone()),
            }
        }
    }

    /// The status row.
    pub fn health(&self) -> SpeechHealth {
        let o = self
            .outcome
            .lock()
            .map(|o| (o.last_success, o.failing.clone()));
        let (last, failing) = o.unwrap_or((None, None));
        let failing = failing.or_else(|| self.settings.as_ref().err().cloned());
        let state = match (&failing, last) {
            (Some(_), _) => "failing",
            (None, Some(_)) => "ok",
            (None, None) => "unused",
        };
        SpeechHealth {
            state: state.into(),
            model: self.settings.as_ref().ok().map(|s| s.model.clone()),
            last_success_unix_seconds: last,
            error: failing.as_ref().map(SpeechFailure::message),
            action: failing.as_ref().map(SpeechFailure::action),
        }
    }

    /// The status row when no `[speech]` server is configured.
    pub fn not_configured() -> SpeechHealth {
        SpeechHealth {
            state: "not_configured".into(),
            ..SpeechHealth::default()
        }
    }
}

#[cfg(test)]
mod client_tests;
