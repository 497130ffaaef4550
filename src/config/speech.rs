//! The `[speech]` table: the OpenAI-compatible speech server that turns voice notes into text
//! (`POST /audio/transcriptions`) and answers into voice (`POST /audio/speech`), and what one
//! account does with the platform's own transcript (`voice_text` in `[media]`).
//!
//! Made by the configuration loader; read by `speech::Speech::from_config`. The key names are
//! the file's and must stay stable.

use serde::Deserialize;

/// The `[speech]` table as written. Every key is optional; without `base_url` the bridge
/// transcribes nothing itself and a voice note reaches the agent as its file and a note.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeechConfig {
    /// The server's OpenAI-compatible base URL (`.../v1`): OpenAI, speaches, or whisper.cpp's
    /// `whisper-server --inference-path /v1/audio/transcriptions`.
    pub base_url: Option<String>,
    /// The transcription model (default `whisper-1`; speaches wants an installed model's id).
    pub model: Option<String>,
    /// The environment variable holding the API key (local servers need none).
    pub api_key_env: Option<String>,
    /// The language of the voice notes (ISO-639-1, e.g. `zh`), always sent when set:
    /// whisper.cpp assumes `en` otherwise.
    pub language: Option<String>,
    /// The longest a transcription may take before the agent gets the file and a note instead
    /// (1 to 600; default 120).
    pub timeout_seconds: Option<u64>,
    /// The largest voice note sent to the server, in MB (1 to 100; default 25, whisper-1's limit).
    pub max_audio_mb: Option<u64>,
    /// The longest voice note transcribed, in seconds (1 to 3600; default 600).
    pub max_audio_seconds: Option<u64>,
    /// The text-to-speech model for answers in voice (default `tts-1`).
    pub tts_model: Option<String>,
    /// The voice of answers (default `alloy`).
    pub voice: Option<String>,
    /// How much of an answer is spoken, in characters (50 to 4096; default 600): a longer
    /// answer's voice is its first part; the text always goes in full.
    pub voice_max_chars: Option<u64>,
}

impl SpeechConfig {
    /// Whether a speech server is configured at all.
    pub fn is_set(&self) -> bool {
        self.base_url
            .as_deref()
            .is_some_and(|u| !u.trim().is_empty())
    }
}

/// Which transcript of a voice note the agent reads (`voice_text` in `[media]` or an account's
/// own media table). Only platforms that transcribe (WeChat, WeCom, DingTalk, QQ) have a choice;
/// elsewhere the bridge's own transcription is the only one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoiceText {
    /// The platform's transcript when it gave one, else our own (the default).
    #[default]
    Platform,
    /// Always our own transcription (the platform's is wrong for some languages); the
    /// platform's only when ours fails.
    Speech,
    /// Both, each marked with where it came from.
    Both,
}
