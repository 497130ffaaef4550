//! Feishu voice notes through the real binary, over real sockets: the real Feishu adapter
//! against the Feishu fake, the real speech client against the fake speech server, and the real
//! `openai` backend against the fake model (which echoes what it read). A voice note (Ogg Opus)
//! is sent to the speech server as it is and its transcript reaches the model; `kill -9` while
//! the transcription is in flight answers the voice note once after the restart.

use crate::process_support;

use std::time::Duration;

use process_support::bed::{ProcessBed, feishu_login, openai_agent};
use process_support::changes::Changes;
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_bridge::testing::fake_speech::{FakeSpeech, ogg_opus_silence};
use scv_feishu::cardkit::ANSWER_ELEMENT;
use scv_feishu::fake::{FakeConfig, FakeFeishu};

const PATIENCE: Duration = Duration::from_secs(30);
const OWNER: &str = "ou_owner";
const CHAT: &str = "oc_p2p_ou_owner";

struct Bed {
    p: ProcessBed,
    fake: FakeFeishu,
    model: FakeOpenAi,
    speech: FakeSpeech,
}

impl Bed {
    async fn new() -> Bed {
        let fake = FakeFeishu::start(FakeConfig::fast())
            .await
            .expect("fake feishu");
        let model = FakeOpenAi::start().await.expect("fake model");
        let speech = FakeSpeech::start().await.expect("fake speech");
        let p = ProcessBed::new(
            |dir| {
                std::fs::create_dir_all(dir.join("ws")).expect("workspace");
                format!(
                    "{}[speech]\nbase_url = \"{}\"\nmodel = \"gpt-4o-mini-transcribe\"\nvoice_max_chars = 60\n\
                     [feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\nowner = \"{OWNER}\"\nworkspace = \"{}\"\n",
                    openai_agent(&model.base_url(), "m", "SCV_VOICE_FEISHU_KEY"),
                    speech.base_url(),
                    fake.base_url(),
                    dir.join("ws").display(),
                )
            },
            &[("SCV_VOICE_FEISHU_KEY", "k")],
        );
        p.save_login("feishu:work", &feishu_login(&fake));
        Bed {
            p,
            fake,
            model,
            speech,
        }
    }

    fn report(&self) -> String {
        format!(
            "sent: {:?}\nspeech requests: {}\nmodel requests: {}\nlog:\n{}",
            self.texts(),
            self.speech.received().len(),
            self.model.requests().len(),
            self.p.log()
        )
    }

    async fn wait_until(&self, what: &str, f: impl FnMut() -> bool) {
        let on: [&dyn Changes; 3] = [&self.fake, &self.model, &self.speech];
        self.p
            .wait_until(PATIENCE, what, &on, || self.report(), f)
            .await;
    }

    /// The texts sent to the owner's chat: a message's content as sent, or the final text of
    /// the card an answer streamed into.
    fn texts(&self) -> Vec<String> {
        let cards = self.fake.cards();
        self.fake
            .sent()
            .iter()
            .filter(|s| s.chat_id == CHAT && s.msg_type != "audio" && s.msg_type != "file")
            .map(|s| {
                let card = s.content["data"]["card_id"].as_str();
                match card.and_then(|id| cards.iter().find(|c| c.card_id == id)) {
                    Some(c) => c.text(ANSWER_ELEMENT).unwrap_or_default(),
                    None => s.content.to_string(),
                }
            })
            .collect()
    }

    async fn drain_and_stop(&self, mut child: Daemon) {
        self.wait_until("every event ACKed", || self.fake.in_flight() == 0)
            .await;
        let pings = self.fake.pings();
        self.wait_until("another ping", || self.fake.pings() > pings)
            .await;
        terminate(&mut child);
    }

    /// The user text of the model's last request.
    fn prompt(&self) -> String {
        let reqs = self.model.requests();
        let last = reqs.last().expect("a model request");
        last.messages.last().expect("a message").content.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feishu_voice_note_is_sent_as_ogg_opus_and_its_transcript_reaches_the_model() {
    let bed = Bed::new().await;
    bed.speech.set_transcript("book a table for two");
    let voice = ogg_opus_silence(150);
    bed.fake.push_p2p_audio(OWNER, voice.clone(), 3_000);
    let child = bed.p.spawn();
    bed.wait_until("the answer", || !bed.texts().is_empty())
        .await;
    bed.drain_and_stop(child).await;
    let got = bed.speech.received();
    assert_eq!(got.len(), 1, "{}", bed.report());
    assert_eq!(
        got[0].file_name, "voice.ogg",
        "Ogg Opus goes as it is, named .ogg"
    );
    assert_eq!(got[0].content_type, "audio/ogg");
    assert!(got[0].bytes == voice, "the voice note's exact bytes");
    assert_eq!(got[0].model, "gpt-4o-mini-transcribe");
    assert!(
        bed.prompt()
            .contains("[voice transcript (speech server): book a table for two]"),
        "{}",
        bed.prompt()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_transcription_answers_the_voice_note_once() {
    let bed = Bed::new().await;
    bed.speech.set_transcript("what is on today");
    bed.speech.hold();
    bed.fake.push_p2p_audio(OWNER, ogg_opus_silence(100), 2_000);
    let mut child = bed.p.spawn();
    bed.wait_until("the transcription in flight", || {
        !bed.speech.received().is_empty()
    })
    .await;
    sigkill(&mut child);
    assert!(bed.model.requests().is_empty(), "killed before the turn");
    bed.speech.release();
    let child = bed.p.spawn();
    bed.wait_until("the answer", || !bed.texts().is_empty())
        .await;
    bed.drain_and_stop(child).await;
    assert_eq!(bed.texts().len(), 1, "answered once: {}", bed.report());
    assert_eq!(bed.model.requests().len(), 1, "one turn");
    assert!(
        bed.prompt().contains("what is on today"),
        "{}",
        bed.prompt()
    );
    assert_eq!(
        bed.speech.received().len(),
        2,
        "transcribed again after the restart"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_answer_on_feishu_is_an_opus_upload_with_its_duration_sent_as_audio() {
    let bed = Bed::new().await;
    let answer = format!(
        "Short first sentence. {}",
        "and then a great deal more ".repeat(20)
    );
    let full = answer.clone();
    bed.model.respond_with(move |_| Some(Reply::text(&answer)));
    bed.fake.push_p2p_audio(OWNER, ogg_opus_silence(100), 2_000);
    let child = bed.p.spawn();
    bed.wait_until("the voice answer", || {
        bed.fake.sent_media().iter().any(|m| m.msg_type == "audio")
    })
    .await;
    bed.drain_and_stop(child).await;
    let media = bed.fake.sent_media();
    assert_eq!(media.len(), 1, "one voice bubble: {}", bed.report());
    let up = &media[0].upload;
    assert_eq!(up.file_type.as_deref(), Some("opus"));
    let ms = scv_bridge::speech::opus_duration_ms(&up.bytes).expect("Ogg Opus uploaded");
    assert_eq!(
        up.duration.as_deref(),
        Some(ms.to_string().as_str()),
        "the duration of the audio"
    );
    let spoken = bed.speech.spoken();
    assert_eq!(spoken.len(), 1);
    assert_eq!(
        spoken[0].input, "Short first sentence.",
        "the first part, within voice_max_chars"
    );
    assert_eq!(spoken[0].response_format, "opus");
    // The fake speaks a second per 15 characters: 21 characters, 2 s.
    assert_eq!(ms, 2_000);
    let texts = bed.texts();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert!(
        texts[0].contains(full.trim_end()),
        "the text in full: {texts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voice_on_answers_a_typed_question_in_voice_and_off_stops_it() {
    let bed = Bed::new().await;
    bed.model
        .respond_with(|_| Some(Reply::text("Sunny all day.")));
    bed.fake.push_p2p_text(OWNER, "/voice on");
    bed.fake.push_p2p_text(OWNER, "weather?");
    let child = bed.p.spawn();
    bed.wait_until("the voice answer", || !bed.fake.sent_media().is_empty())
        .await;
    bed.fake.push_p2p_text(OWNER, "/voice off");
    bed.fake.push_p2p_text(OWNER, "and tomorrow?");
    bed.wait_until("the second answer", || {
        bed.model.requests().len() == 2 && bed.texts().len() == 4
    })
    .await;
    bed.drain_and_stop(child).await;
    let texts = bed.texts();
    assert!(texts[0].contains("Voice: on."), "{texts:?}");
    assert!(texts[2].contains("Voice: off."), "{texts:?}");
    assert_eq!(
        bed.fake.sent_media().len(),
        1,
        "voice only while on: {}",
        bed.report()
    );
    assert_eq!(bed.speech.spoken().len(), 1);
    assert!(
        bed.speech.received().is_empty(),
        "typed questions are not transcribed"
    );
}
