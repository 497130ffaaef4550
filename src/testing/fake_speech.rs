//! A fake OpenAI-compatible speech server on loopback (spec B7), for tests and benches of
//! anything that transcribes or speaks.
//!
//! `POST /v1/audio/transcriptions` reads the multipart form as the real servers do, records the
//! file's name, content type and bytes with `model`, `language` and `response_format`, checks
//! the magic (`RIFF…WAVE`, `OggS`, `ID3`; anything else is 400 as OpenAI answers), and answers
//! `{"text": <scripted>}`. `POST /v1/audio/speech` checks `model`, `voice`, `input` (≤ 4096
//! characters) and `response_format`, records them, and for `opus` answers a valid Ogg Opus
//! stream built here ([`ogg_opus_silence`]), a second of it per 15 characters of input.
//! Knobs: fail with a status ([`FakeSpeech::fail_with`]), hold requests until released
//! ([`FakeSpeech::hold`]), WAV despite `opus` ([`FakeSpeech::answer_wav`]), and a mode
//! that behaves like whisper.cpp (ignores `model`, rejects Ogg Opus) or speaches (404 for a
//! model it does not have).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Multipart, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// One transcription request as the server read it.
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// The file part's name.
    pub file_name: String,
    /// The file part's content type.
    pub content_type: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// `model`.
    pub model: String,
    /// `language`, when sent.
    pub language: Option<String>,
    /// `response_format`, when sent.
    pub response_format: Option<String>,
    /// The `Authorization` header, when sent.
    pub authorization: Option<String>,
}

/// One speech request as the server read it.
#[derive(Debug, Clone, Default)]
pub struct SpeechAsked {
    /// `model`.
    pub model: String,
    /// `voice`.
    pub voice: String,
    /// `input`: the text read aloud.
    pub input: String,
    /// `response_format`.
    pub response_format: String,
}

/// Which real server the fake behaves like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// OpenAI: every model, Ogg and WAV.
    OpenAi,
    /// whisper.cpp's server without `--convert`: ignores `model`, reads no Ogg Opus.
    WhisperCpp,
    /// speaches: 404 for a model not in this list.
    Speaches(Vec<String>),
}

#[derive(Default)]
struct Inner {
    received: Mutex<Vec<Received>>,
    spoken: Mutex<Vec<SpeechAsked>>,
    transcript: Mutex<String>,
    fail: Mutex<Option<u16>>,
    wav: Mutex<bool>,
    mode: Mutex<Option<Mode>>,
    arrived: Notify,
}

/// The fake server; stops when dropped.
pub struct FakeSpeech {
    addr: SocketAddr,
    inner: Arc<Inner>,
    held: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Drop for FakeSpeech {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Shared = (Arc<Inner>, watch::Receiver<bool>);

impl FakeSpeech {
    /// Starts on a free loopback port, answering `"hello from a voice note"`.
    pub async fn start() -> std::io::Result<FakeSpeech> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        FakeSpeech::serve(listener)
    }

    /// Serves on `listener` (a test that restarts the server keeps its port).
    pub fn serve(listener: tokio::net::TcpListener) -> std::io::Result<FakeSpeech> {
        let addr = listener.local_addr()?;
        let inner = Arc::new(Inner::default());
        *inner.transcript.lock().unwrap_or_else(|p| p.into_inner()) =
            "hello from a voice note".into();
        let (held, rx) = watch::channel(false);
        let app = Router::new()
            .route("/v1/audio/transcriptions", post(transcribe))
            .route("/v1/audio/speech", post(speak))
            .with_state((inner.clone(), rx));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeSpeech {
            addr,
            inner,
            held,
            task,
        })
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The transcript every later transcription answers.
    pub fn set_transcript(&self, text: &str) {
        *lock(&self.inner.transcript) = text.to_string();
    }

    /// Every later request fails with `status` (`None`: answer again).
    pub fn fail_with(&self, status: Option<u16>) {
        *lock(&self.inner.fail) = status;
    }

    /// Holds every request after it is recorded until [`FakeSpeech::release`].
    pub fn hold(&self) {
        self.held.send_replace(true);
    }

    /// Answers the held requests and every later one.
    pub fn release(&self) {
        self.held.send_replace(false);
    }

    /// Speech answers WAV even when `opus` is asked for (servers that ignore the format).
    pub fn answer_wav(&self, wav: bool) {
        *lock(&self.inner.wav) = wav;
    }

    /// Behaves like another server.
    pub fn mode(&self, mode: Mode) {
        *lock(&self.inner.mode) = Some(mode);
    }

    /// Every transcription request so far.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.inner.received).clone()
    }

    /// Every speech request so far.
    pub fn spoken(&self) -> Vec<SpeechAsked> {
        lock(&self.inner.spoken).clone()
    }

    /// Resolves at the next request of either kind; armed when called.
    pub fn changed(&self) -> impl std::future::Future<Output = ()> + Send + '_ {
        self.inner.arrived.notified()
    }

    /// Waits until `n` requests of either kind have arrived.
    pub async fn wait_requests(&self, n: usize) {
        loop {
            let arrived = self.inner.arrived.notified();
            if lock(&self.inner.received).len() + lock(&self.inner.spoken).len() >= n {
                return;
            }
            arrived.await;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn error(status: u16, message: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        code,
        axum::Json(json!({"error": {"message": message, "type": "fake"}})),
    )
        .into_response()
}

async fn wait_release(mut held: watch::Receiver<bool>) {
    let _ = held.wait_for(|h| !*h).await;
}

async fn read_form(mut form: Multipart) -> Result<Received, String> {
    let mut r = Received::default();
    while let Some(field) = form.next_field().await.map_err(|e| e.to_string())? {
        let name = field.name().unwrap_or_default().to_string();
        if name == "file" {
            r.file_name = field.file_name().unwrap_or_default().to_string();
            r.content_type = field.content_type().unwrap_or_default().to_string();
            r.bytes = field.bytes().await.map_err(|e| e.to_string())?.to_vec();
            continue;
        }
        let text = field.text().await.map_err(|e| e.to_string())?;
        match name.as_str() {
            "model" => r.model = text,
            "language" => r.language = Some(text),
            "response_format" => r.response_format = Some(text),
            _ => {}
        }
    }
    Ok(r)
}

async fn transcribe(
    State((inner, held)): State<Shared>,
    headers: axum::http::HeaderMap,
    form: Multipart,
) -> Response {
    let mut r = match read_form(form).await {
        Ok(r) => r,
        Err(e) => return error(400, &e),
    };
    r.authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let (bytes, model) = (r.bytes.clone(), r.model.clone());
    lock(&inner.received).push(r);
    inner.arrived.notify_waiters();
    wait_release(held).await;
    if let Some(s) = *lock(&inner.fail) {
        return error(s, "the fake speech server was told to fail");
    }
    let mode = lock(&inner.mode).clone().unwrap_or(Mode::OpenAi);
    if let Mode::Speaches(models) = &mode
        && !models.contains(&model)
    {
        return error(404, &format!("Model '{model}' is not installed locally"));
    }
    if model.is_empty() && mode != Mode::WhisperCpp {
        return error(400, "you must provide a model parameter");
    }
    let wav = bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WAVE";
    let ogg = bytes.starts_with(b"OggS");
    let known = wav || ogg || bytes.starts_with(b"ID3");
    if !known || (ogg && mode == Mode::WhisperCpp) {
        return error(400, "Invalid file format.");
    }
    let text = lock(&inner.transcript).clone();
    axum::Json(json!({ "text": text })).into_response()
}

async fn speak(State((inner, held)): State<Shared>, body: axum::Json<Value>) -> Response {
    let s = |k: &str| {
        body.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let asked = SpeechAsked {
        model: s("model"),
        voice: s("voice"),
        input: s("input"),
        response_format: body
            .get("response_format")
            .and_then(Value::as_str)
            .unwrap_or("mp3")
            .to_string(),
    };
    lock(&inner.spoken).push(asked.clone());
    inner.arrived.notify_waiters();
    wait_release(held).await;
    if let Some(st) = *lock(&inner.fail) {
        return error(st, "the fake speech server was told to fail");
    }
    if asked.model.is_empty() || asked.voice.is_empty() || asked.input.is_empty() {
        return error(400, "model, voice and input are required");
    }
    if asked.input.chars().count() > 4096 {
        return error(400, "input is longer than 4096 characters");
    }
    let seconds = asked.input.chars().count().div_ceil(15).max(1);
    if *lock(&inner.wav) || asked.response_format == "wav" {
        let pcm = vec![0u8; seconds * 48_000];
        return crate::speech::wav(&pcm, 24_000).into_response();
    }
    if asked.response_format != "opus" {
        return error(400, "the fake speaks opus and wav only");
    }
    ogg_opus_silence(seconds * 50).into_response()
}

/// A valid Ogg Opus stream of `frames` 20 ms frames of silence: `OpusHead` (version 1, mono,
/// pre-skip 312, 48 kHz), `OpusTags`, then the frame `F8 FF FE` (the well-known silent frame)
/// `frames` times, the granule position growing by 960 per frame (spec B7). Its duration is
/// `frames × 20` ms.
pub fn ogg_opus_silence(frames: usize) -> Vec<u8> {
    use ogg::writing::{PacketWriteEndInfo, PacketWriter};
    const SERIAL: u32 = 0x5C0B_1D6E;
    const PRE_SKIP: u64 = 312;
    let mut head = b"OpusHead".to_vec();
    head.push(1);
    head.push(1);
    head.extend_from_slice(&(PRE_SKIP as u16).to_le_bytes());
    head.extend_from_slice(&48_000u32.to_le_bytes());
    head.extend_from_slice(&0i16.to_le_bytes());
    head.push(0);
    let mut tags = b"OpusTags".to_vec();
    tags.extend_from_slice(&4u32.to_le_bytes());
    tags.extend_from_slice(b"fake");
    tags.extend_from_slice(&0u32.to_le_bytes());
    let mut w = PacketWriter::new(Vec::new());
    let mut write = |data: Vec<u8>, end: PacketWriteEndInfo, gp: u64| {
        w.write_packet(data, SERIAL, end, gp)
            .unwrap_or_else(|e| panic!("writing Ogg to memory cannot fail: {e}"));
    };
    write(head, PacketWriteEndInfo::EndPage, 0);
    write(tags, PacketWriteEndInfo::EndPage, 0);
    for i in 0..frames {
        let gp = PRE_SKIP + 960 * (i as u64 + 1);
        let end = if i + 1 == frames {
            PacketWriteEndInfo::EndStream
        } else if (i + 1) % 50 == 0 {
            PacketWriteEndInfo::EndPage
        } else {
            PacketWriteEndInfo::NormalPacket
        };
        write(vec![0xF8, 0xFF, 0xFE], end, gp);
    }
    w.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_silent_stream_is_ogg_opus_of_its_length() {
        let s = ogg_opus_silence(137);
        assert!(s.starts_with(b"OggS"));
        assert_eq!(crate::speech::opus_duration_ms(&s).expect("opus"), 137 * 20);
    }
}
