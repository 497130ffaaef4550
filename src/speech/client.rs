//! The two calls to the server. Caps before anything is sent (size, then the duration the
//! container tells), the whole call within the transcription cap, and the answer read as the
//! API promises (`{"text": ...}`, tolerating `text/plain` from servers that send it).

use std::time::Duration;

use super::error::from_status;
use super::{Settings, Speech, SpeechFailure, audio};

/// The most of an error body kept for a message (servers echo requests; never audio here).
const DETAIL_CHARS: usize = 200;

impl Speech {
    /// The transcript of a voice note's bytes, within the cap `[speech] timeout_seconds` sets.
    /// SILK is decoded to WAV first; Ogg Opus, WAV and MP3 go as they are.
    pub async fn transcribe(&self, bytes: Vec<u8>) -> Result<String, SpeechFailure> {
        let r = self.transcribe_inner(bytes).await;
        self.record(&r);
        r
    }

    async fn transcribe_inner(&self, bytes: Vec<u8>) -> Result<String, SpeechFailure> {
        let s = self.settings()?;
        if bytes.len() as u64 > s.max_bytes {
            return Err(over_size(bytes.len() as u64, s.max_bytes));
        }
        let up = tokio::task::spawn_blocking(move || audio::upload(bytes))
            .await
            .map_err(|e| SpeechFailure::Decode(e.to_string()))??;
        if up.bytes.len() as u64 > s.max_bytes {
            return Err(over_size(up.bytes.len() as u64, s.max_bytes));
        }
        if let Some(secs) = up.seconds.filter(|t| *t > s.max_seconds as f64) {
            return Err(SpeechFailure::TooLarge(format!(
                "{} s, over the {} s limit ([speech] max_audio_seconds)",
                secs.ceil(),
                s.max_seconds
            )));
        }
        let call = self.post_transcription(s, up);
        match tokio::time::timeout(s.timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(SpeechFailure::TimedOut(s.timeout.as_secs())),
        }
    }

    async fn post_transcription(
        &self,
        s: &Settings,
        up: audio::Upload,
    ) -> Result<String, SpeechFailure> {
        let part = reqwest::multipart::Part::bytes(up.bytes)
            .file_name(up.file_name)
            .mime_str(up.mime)
            .map_err(|e| SpeechFailure::Malformed(e.to_string()))?;
        let mut form = reqwest::multipart::Form::new()
            .part("file", part)
            .text("model", s.model.clone())
            .text("response_format", "json");
        if let Some(l) = &s.language {
            form = form.text("language", l.clone());
        }
        let req = self
            .http
            .post(format!("{}/audio/transcriptions", s.base_url))
            .multipart(form);
        let resp = authorized(req, s).send().await.map_err(network)?;
        let status = resp.status().as_u16();
        let json = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|t| t.contains("json"));
        let body = resp.text().await.map_err(network)?;
        if !(200..300).contains(&status) {
            return Err(from_status(status, detail(&body)));
        }
        if !json {
            return Ok(body.trim().to_string());
        }
        let v: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| SpeechFailure::Malformed(e.to_string()))?;
        v.get("text")
            .and_then(|t| t.as_str())
            .map(|t| t.trim().to_string())
            .ok_or_else(|| SpeechFailure::Malformed("no \"text\" in the answer".into()))
    }

    /// Ogg Opus audio of `text` (`response_format=opus`), checked to be Ogg Opus: some servers
    /// ignore the format asked for and send WAV or MP3, which no platform plays as a voice bubble.
    pub async fn synthesize(&self, text: &str) -> Result<Vec<u8>, SpeechFailure> {
        let r = self.synthesize_inner(text).await;
        self.record(&r);
        r
    }

    async fn synthesize_inner(&self, text: &str) -> Result<Vec<u8>, SpeechFailure> {
        let s = self.settings()?;
        let body = serde_json::json!({
            "model": s.tts_model,
            "voice": s.voice,
            "input": text,
            "response_format": "opus",
        });
        let req = self
            .http
            .post(format!("{}/audio/speech", s.base_url))
            .json(&body);
        let call = async {
            let resp = authorized(req, s).send().await.map_err(network)?;
            let status = resp.status().as_u16();
            if !(200..300).contains(&status) {
                let body = resp.text().await.unwrap_or_default();
                return Err(from_status(status, detail(&body)));
            }
            let bytes = resp.bytes().await.map_err(network)?;
            match audio::sniff(&bytes) {
                Some(audio::Format::Ogg) => Ok(bytes.to_vec()),
                other => Err(SpeechFailure::Malformed(format!(
                    "asked for Ogg Opus, got {}",
                    other.map_or("unknown bytes".to_string(), |f| format!("{f:?}"))
                ))),
            }
        };
        match tokio::time::timeout(s.timeout, call).await {
            Ok(r) => r,
            Err(_) => Err(SpeechFailure::TimedOut(s.timeout.as_secs())),
        }
    }

    /// `doctor`'s check: a tenth of a second of silence transcribed within `within`.
    pub async fn probe(&self, within: Duration) -> Result<(), SpeechFailure> {
        let silence = audio::wav(&vec![0u8; audio::WAV_RATE as usize / 5], audio::WAV_RATE);
        match tokio::time::timeout(within, self.transcribe(silence)).await {
            Ok(r) => r.map(drop),
            Err(_) => Err(SpeechFailure::TimedOut(within.as_secs())),
        }
    }
}

fn authorized(req: reqwest::RequestBuilder, s: &Settings) -> reqwest::RequestBuilder {
    match &s.key {
        Some(k) => req.bearer_auth(k.expose()),
        None => req,
    }
}

fn network(e: reqwest::Error) -> SpeechFailure {
    // The URL is ours (configuration), the error names no audio; without the URL it stays short.
    SpeechFailure::Unreachable(e.without_url().to_string())
}

fn detail(body: &str) -> String {
    let v: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let msg = v
        .as_ref()
        .and_then(|v| v.get("error"))
        .map(|e| {
            e.get("message")
                .and_then(|m| m.as_str())
                .map_or_else(|| e.to_string(), str::to_string)
        })
        .unwrap_or_else(|| body.to_string());
    msg.chars().take(DETAIL_CHARS).collect()
}

fn over_size(n: u64, max: u64) -> SpeechFailure {
    SpeechFailure::TooLarge(format!(
        "{}, over the {} limit ([speech] max_audio_mb)",
        crate::words::human_size(n),
        crate::words::human_size(max)
    ))
}
