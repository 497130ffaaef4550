//! Spoken answers on Telegram: after `/voice on` an answer also goes as a voice note
//! (`sendVoice` with the Ogg Opus the speech server made, beside the text); `/voice off` stops
//! it. The real adapter against the fake Bot API and the real speech client against the fake
//! speech server, over real sockets.

use scv_bridge::protocol::ComponentState;
use scv_bridge::testing::fake_speech::FakeSpeech;

use super::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voice_on_sends_the_answer_as_a_voice_note_and_off_stops_it() {
    let speech = FakeSpeech::start().await.expect("fake speech");
    let mut setup = Setup::owned();
    setup.agent = TestAgent::answering(|_| "Sunny all day.".into());
    // A spoken answer is written into the workspace before it is sent (files leave only from
    // there); `[speech]` is a table of its own, after the account's lines.
    let workspace = tempfile::tempdir().expect("workspace");
    setup.table = format!(
        "senders = \"owner\"\nworkspace = \"{}\"\n[speech]\nbase_url = \"{}\"\nmodel = \"whisper-1\"\n",
        workspace.path().display(),
        speech.base_url()
    );
    let h = Harness::start(setup).await;
    h.wait_state(ComponentState::Connected).await;
    let owner = h.fake.owner_chat();

    // Before the pipeline has a speech server, `/voice on` says that nothing can be spoken yet
    // (an answer it cannot speak would otherwise go as text without a word).
    h.fake.push_text(owner.clone(), "/voice on");
    h.until("the switch's reply", |f| !f.sent().is_empty())
        .await;
    let said = h.texts_to(owner.id).remove(0);
    assert!(
        said.starts_with("Voice: on.") && said.contains("no speech server is set"),
        "{said}"
    );
    // The bed's daemon is the platform's alone: the speech server goes to its pipeline as the
    // real daemon's start hands it over.
    let server = scv_bridge::speech::Speech::from_config(&h.config.speech).expect("[speech]");
    h.conversation.set_speech(Some(std::sync::Arc::new(server)));
    let voices = |f: &scv_telegram::fake::FakeHandle| {
        f.uploads()
            .into_iter()
            .filter(|u| u.method == "sendVoice")
            .collect::<Vec<_>>()
    };

    h.fake.push_text(owner.clone(), "/voice on");
    h.until("the second switch's reply", |f| {
        f.sent()
            .iter()
            .any(|s| s.text == "Voice: on. Answers come as a voice message too.")
    })
    .await;
    h.fake.push_text(owner.clone(), "weather?");
    h.until("the text answer", |f| {
        f.sent().iter().any(|s| s.text == "Sunny all day.")
    })
    .await;
    h.settle().await;
    assert!(
        !voices(&h.fake).is_empty(),
        "no voice note: spoken {:?}, uploads {:?}, texts {:?}",
        speech.spoken().len(),
        h.fake
            .uploads()
            .iter()
            .map(|u| u.method.clone())
            .collect::<Vec<_>>(),
        h.texts_to(owner.id)
    );
    let voice = voices(&h.fake).remove(0);
    assert_eq!(voice.chat_id, owner.id);
    assert!(
        voice.bytes.starts_with(b"OggS"),
        "sent as the Ogg Opus the speech server made"
    );
    assert_eq!(speech.spoken().len(), 1, "one answer spoken");
    assert!(
        h.texts_to(owner.id).iter().any(|t| t == "Sunny all day."),
        "the text goes too: {:?}",
        h.texts_to(owner.id)
    );

    h.fake.push_text(owner.clone(), "/voice off");
    h.fake.push_text(owner.clone(), "and tomorrow?");
    h.until("the second answer", |f| {
        f.sent()
            .iter()
            .filter(|s| s.text == "Sunny all day.")
            .count()
            == 2
    })
    .await;
    h.drain().await;
    assert_eq!(voices(&h.fake).len(), 1, "no voice note once off");
    assert_eq!(speech.spoken().len(), 1);
    assert!(
        speech.received().is_empty(),
        "typed questions are not transcribed"
    );
    h.stop().await;
}
