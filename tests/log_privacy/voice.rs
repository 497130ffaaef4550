//! A WeChat run with voice notes: the logs, at TRACE from every thread, carry neither the
//! platform's transcript nor ours, nor the answer (the log-privacy coverage, for voice).

use std::sync::Arc;

use scv_bridge::agent::Agent;
use scv_bridge::testing::fake_speech::FakeSpeech;
use scv_bridge::testing::wechat::{voice_item_on_cdn, wechat_silk};

use crate::captured;
use crate::media_support::{Bed, OWNER, ScriptedAgent};

#[tokio::test]
async fn no_transcript_reaches_the_logs() {
    captured();
    let speech = FakeSpeech::start().await.expect("speech");
    speech.set_transcript("TRANSCRIPT-lynx-3381");
    let extra = format!("[speech]\nbase_url = \"{}\"\n", speech.base_url());
    let mut bed = Bed::new(&extra, "").await;
    let agent = Arc::new(ScriptedAgent::default());
    *agent.answer.lock().expect("lock") = "ANSWER-marten-6620".into();
    let a = agent.clone();
    bed.start(Arc::new(move |_| {
        let a: Arc<dyn Agent> = a.clone();
        a
    }))
    .await;
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![voice_item_on_cdn(&h, &wechat_silk(400), 400, None)],
    );
    bed.wait_sent(1).await;
    h.push_items(
        OWNER,
        vec![voice_item_on_cdn(
            &h,
            &wechat_silk(400),
            400,
            Some("PLATFORM-vole-1207"),
        )],
    );
    bed.wait_sent(2).await;
    // A failing server: the failure is logged by its code, never with the audio or a name.
    speech.fail_with(Some(500));
    h.push_items(
        OWNER,
        vec![voice_item_on_cdn(&h, &wechat_silk(400), 400, None)],
    );
    bed.wait_sent(3).await;
    bed.stop().await;
    let prompts = agent.prompts.lock().expect("lock").clone();
    assert!(
        prompts[0].contains("TRANSCRIPT-lynx-3381"),
        "transcribed: {prompts:?}"
    );
    assert!(prompts[1].contains("PLATFORM-vole-1207"), "{prompts:?}");
    let logs = String::from_utf8_lossy(&captured().0.lock().expect("lock")).into_owned();
    assert!(
        logs.contains("speech.server"),
        "the failure's code is logged"
    );
    for needle in [
        "TRANSCRIPT-lynx",
        "PLATFORM-vole",
        "ANSWER-marten",
        "voice-",
    ] {
        assert!(!logs.contains(needle), "{needle} reached the logs");
    }
}
