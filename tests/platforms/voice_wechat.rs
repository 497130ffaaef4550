//! WeChat voice notes end to end: the fake iLink server and its CDN, the daemon with the real
//! WeChat adapter, the fake speech server behind the real speech client, all over real
//! sockets. The SILK audio is made by the real encoder in the test.

use crate::media_support;

use std::sync::Arc;

use media_support::{Bed, OWNER, ScriptedAgent};
use scv_bridge::agent::Agent;
use scv_bridge::testing::fake_speech::FakeSpeech;
use scv_bridge::testing::wechat::{voice_item_on_cdn, wechat_silk};

fn scripted(agent: &Arc<ScriptedAgent>) -> media_support::MakeAgent {
    let agent = agent.clone();
    Arc::new(move |_| {
        let a: Arc<dyn Agent> = agent.clone();
        a
    })
}

/// A bed whose configuration names `speech` (with `language = "en"`) and `account` lines.
async fn bed(speech: &FakeSpeech, account: &str) -> (Bed, Arc<ScriptedAgent>) {
    let extra = format!(
        "[speech]\nbase_url = \"{}\"\nlanguage = \"en\"\n",
        speech.base_url()
    );
    let mut bed = Bed::new(&extra, account).await;
    let agent = Arc::new(ScriptedAgent::default());
    *agent.answer.lock().expect("lock") = "heard you".into();
    bed.start(scripted(&agent)).await;
    (bed, agent)
}

fn prompts(agent: &ScriptedAgent) -> Vec<String> {
    agent.prompts.lock().expect("lock").clone()
}

#[tokio::test]
async fn a_voice_note_with_wechats_transcript_reaches_the_model_as_that_text_and_the_audio_is_kept()
{
    let speech = FakeSpeech::start().await.expect("speech");
    let (mut bed, agent) = bed(&speech, "").await;
    let silk = wechat_silk(1_000);
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![voice_item_on_cdn(
            &h,
            &silk,
            1_000,
            Some("remind me at five"),
        )],
    );
    bed.wait_sent(1).await;
    let p = prompts(&agent);
    assert_eq!(
        p[0], "[voice]\n[voice transcript: remind me at five]",
        "marked as the transcript of a voice note, once"
    );
    assert!(
        speech.received().is_empty(),
        "voice_text = platform: no transcription of ours"
    );
    let files = bed.inbox_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::read(bed.workspace().join(&files[0])).expect("saved"),
        silk
    );
    assert_eq!(
        agent.attachments.lock().expect("lock")[0].len(),
        0,
        "the text is enough"
    );
    bed.stop().await;
}

#[tokio::test]
async fn a_voice_note_without_a_transcript_is_decoded_from_silk_and_transcribed() {
    let speech = FakeSpeech::start().await.expect("speech");
    speech.set_transcript("call mum at six");
    let (mut bed, agent) = bed(&speech, "").await;
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![voice_item_on_cdn(&h, &wechat_silk(1_500), 1_500, None)],
    );
    bed.wait_sent(1).await;
    assert_eq!(
        prompts(&agent)[0],
        "[voice]\n[voice transcript (speech server): call mum at six]"
    );
    let got = speech.received();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(
        (r.file_name.as_str(), r.content_type.as_str()),
        ("voice.wav", "audio/wav")
    );
    assert_eq!(&r.bytes[..4], b"RIFF");
    assert_eq!(
        r.bytes.len(),
        44 + 1_500 * 32,
        "1.5 s decoded at 16 kHz mono s16le: the SILK file's 75 frames of 20 ms"
    );
    assert_eq!(r.language.as_deref(), Some("en"));
    assert_eq!(bed.inbox_files().len(), 1, "the audio is in the inbox too");
    bed.stop().await;
}

#[tokio::test]
async fn voice_text_speech_prefers_our_transcript_to_the_platforms() {
    let speech = FakeSpeech::start().await.expect("speech");
    speech.set_transcript("привет, как дела");
    let account = "\n[wechat.phone.media]\nvoice_text = \"speech\"\n";
    let (mut bed, agent) = bed(&speech, account).await;
    let h = bed.h();
    let item = voice_item_on_cdn(&h, &wechat_silk(600), 600, Some("pre vet cuck della"));
    h.push_items(OWNER, vec![item]);
    bed.wait_sent(1).await;
    let p = prompts(&agent);
    assert_eq!(
        p[0],
        "[voice]\n[voice transcript (speech server): привет, как дела]"
    );
    assert!(
        !p[0].contains("della"),
        "the platform's wrong words are not passed on"
    );
    bed.stop().await;
}

#[tokio::test]
async fn the_speech_server_down_gets_the_owner_the_answer_to_the_file_and_status_says_so() {
    let speech = FakeSpeech::start().await.expect("speech");
    speech.fail_with(Some(503));
    let (mut bed, agent) = bed(&speech, "").await;
    *agent.answer.lock().expect("lock") = "I got an audio file".into();
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![voice_item_on_cdn(&h, &wechat_silk(400), 400, None)],
    );
    let sent = bed.wait_sent(1).await;
    assert!(
        sent[0].starts_with(
            "(Your voice note was not transcribed: the speech server failed (HTTP 503)."
        ),
        "{sent:?}"
    );
    assert!(sent[0].ends_with("I got an audio file"), "{sent:?}");
    let p = prompts(&agent);
    assert_eq!(
        p[0],
        "[voice]\n[voice note, not transcribed: the audio file is attached]"
    );
    let files = bed.inbox_files();
    let attached = agent.attachments.lock().expect("lock")[0].clone();
    assert_eq!(
        attached,
        vec![bed.workspace().join(&files[0])],
        "the agent got the file"
    );
    let status = scv_bridge::testing::daemon_status(bed.daemon.as_ref().expect("running")).await;
    let row = status.speech.clone().expect("the speech row");
    assert_eq!(row.state, "failing");
    assert_eq!(
        row.error.as_deref(),
        Some("the speech server failed (HTTP 503)")
    );
    assert!(
        row.action.as_deref().is_some_and(|a| a.contains("doctor")),
        "{row:?}"
    );
    let table = scv_bridge::cli::status_table(&status, 0);
    assert!(table.contains("speech: whisper-1  failing"), "{table}");
    bed.stop().await;
}
