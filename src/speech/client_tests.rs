//! The client against the fake speech server over a real socket: what it sends, how it reads
//! the answers, and how each failure is classified.

use std::time::Duration;

use super::*;
use crate::testing::fake_speech::{FakeSpeech, Mode, ogg_opus_silence};

fn speech(fake: &FakeSpeech, language: Option<&str>) -> Speech {
    let cfg = SpeechConfig {
        base_url: Some(fake.base_url()),
        model: Some("whisper-1".into()),
        api_key_env: Some("SPEECH_KEY".into()),
        language: language.map(str::to_string),
        timeout_seconds: Some(5),
        ..SpeechConfig::default()
    };
    let s = Settings::with_env(&cfg, |_| Some("sk-test".into()))
        .expect("key set")
        .expect("configured");
    Speech::with_settings(s)
}

#[tokio::test]
async fn an_ogg_voice_note_goes_as_it_is_with_model_language_and_key() {
    let fake = FakeSpeech::start().await.expect("fake");
    fake.set_transcript("turn the lights off");
    let s = speech(&fake, Some("en"));
    let ogg = ogg_opus_silence(100);
    assert_eq!(
        s.transcribe(ogg.clone()).await.expect("text"),
        "turn the lights off"
    );
    let r = &fake.received()[0];
    assert_eq!(
        (r.file_name.as_str(), r.content_type.as_str()),
        ("voice.ogg", "audio/ogg")
    );
    assert_eq!(r.bytes, ogg);
    assert_eq!(r.model, "whisper-1");
    assert_eq!(r.language.as_deref(), Some("en"));
    assert_eq!(r.response_format.as_deref(), Some("json"));
    assert_eq!(r.authorization.as_deref(), Some("Bearer sk-test"));
    assert_eq!(s.health().state, "ok");
}

#[cfg(feature = "silk")]
#[tokio::test]
async fn a_silk_voice_note_is_decoded_to_16_khz_wav_first() {
    let fake = FakeSpeech::start().await.expect("fake");
    let s = speech(&fake, None);
    let pcm: Vec<u8> = (0..24_000u32)
        .flat_map(|i| (((i % 48) as i16 - 24) * 300).to_le_bytes())
        .collect();
    let silk = encode_silk_for_tests(&pcm, 24_000).expect("encodes");
    s.transcribe(silk).await.expect("text");
    let r = &fake.received()[0];
    assert_eq!(
        (r.file_name.as_str(), r.content_type.as_str()),
        ("voice.wav", "audio/wav")
    );
    assert_eq!(&r.bytes[..4], b"RIFF");
    assert_eq!(
        u32::from_le_bytes(r.bytes[24..28].try_into().expect("rate")),
        16_000
    );
    assert_eq!(
        r.bytes.len(),
        44 + 32_000,
        "one second at 16 kHz mono s16le"
    );
    assert!(r.language.is_none(), "no language set, none sent");
}

#[tokio::test]
async fn failures_are_classified_and_shown_in_the_health() {
    let fake = FakeSpeech::start().await.expect("fake");
    let s = speech(&fake, None);
    fake.fail_with(Some(503));
    let e = s.transcribe(ogg_opus_silence(10)).await.expect_err("fails");
    assert_eq!(e, SpeechFailure::Server(503));
    let h = s.health();
    assert_eq!(h.state, "failing");
    assert!(
        h.action.as_deref().is_some_and(|a| a.contains("doctor")),
        "{h:?}"
    );
    fake.fail_with(None);
    fake.mode(Mode::Speaches(vec!["Systran/faster-whisper-small".into()]));
    let e = s
        .transcribe(ogg_opus_silence(10))
        .await
        .expect_err("unknown model");
    assert_eq!(e.code(), "speech.unknown_model");
    fake.mode(Mode::WhisperCpp);
    let e = s
        .transcribe(ogg_opus_silence(10))
        .await
        .expect_err("no opus");
    assert_eq!(e.code(), "speech.unreadable");
    assert!(e.action().contains("--convert"));
    let e = s
        .transcribe(b"%PDF-1.7 not audio".to_vec())
        .await
        .expect_err("not audio");
    assert_eq!(e.code(), "speech.decode");
    assert_eq!(fake.received().len(), 3, "what is not audio is never sent");
}

#[tokio::test]
async fn caps_stop_audio_before_it_is_sent() {
    let fake = FakeSpeech::start().await.expect("fake");
    let mut settings = Settings::with_env(
        &SpeechConfig {
            base_url: Some(fake.base_url()),
            max_audio_seconds: Some(1),
            ..SpeechConfig::default()
        },
        |_| None,
    )
    .expect("no key needed")
    .expect("configured");
    let s = Speech::with_settings(settings.clone());
    let e = s
        .transcribe(ogg_opus_silence(100))
        .await
        .expect_err("2 s > 1 s");
    assert_eq!(e.code(), "speech.too_large");
    settings.max_bytes = 10;
    let s = Speech::with_settings(settings);
    let e = s
        .transcribe(ogg_opus_silence(10))
        .await
        .expect_err("over the size");
    assert_eq!(e.code(), "speech.too_large");
    assert!(fake.received().is_empty());
    assert_eq!(
        s.health().state,
        "unused",
        "a long note says nothing of the server"
    );
}

#[tokio::test(start_paused = true)]
async fn a_transcription_that_takes_too_long_ends_at_the_cap() {
    let fake = FakeSpeech::start().await.expect("fake");
    fake.hold();
    let s = speech(&fake, None);
    let e = s
        .transcribe(ogg_opus_silence(10))
        .await
        .expect_err("held past the cap");
    assert_eq!(e, SpeechFailure::TimedOut(5));
    assert_eq!(fake.received().len(), 1);
}

#[tokio::test]
async fn speech_is_ogg_opus_and_anything_else_is_refused() {
    let fake = FakeSpeech::start().await.expect("fake");
    let s = speech(&fake, None);
    let audio = s.synthesize("All thirty tests pass.").await.expect("audio");
    assert_eq!(opus_duration_ms(&audio).expect("opus"), 2_000);
    let asked = &fake.spoken()[0];
    assert_eq!(
        (asked.model.as_str(), asked.voice.as_str()),
        ("tts-1", "alloy")
    );
    assert_eq!(asked.response_format, "opus");
    fake.answer_wav(true);
    let e = s
        .synthesize("hi")
        .await
        .expect_err("wav is no voice bubble");
    assert_eq!(e.code(), "speech.malformed");
    let e = s.probe(Duration::from_secs(5)).await;
    assert!(e.is_ok(), "{e:?}");
}

#[test]
fn a_key_variable_that_is_not_set_is_said_by_every_call() {
    let cfg = SpeechConfig {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        api_key_env: Some("NO_SUCH_SPEECH_KEY".into()),
        ..SpeechConfig::default()
    };
    let e = Settings::with_env(&cfg, |_| None).expect_err("unset");
    assert_eq!(e.code(), "speech.key_missing");
    assert!(e.action().contains("NO_SUCH_SPEECH_KEY"));
    assert!(
        Settings::with_env(&SpeechConfig::default(), |_| None)
            .expect("ok")
            .is_none()
    );
}
