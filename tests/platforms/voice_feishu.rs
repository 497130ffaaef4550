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
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_bridge::testing::fake_speech::{FakeSpeech, ogg_opus_silence};
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
                    "{}[speech]\nbase_url = \"{}\"\nmodel = \"gpt-4o-mini-transcribe\"\n\
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

    /// The plain texts sent to the owner's chat (cards and posts joined to their text).
    fn texts(&self) -> Vec<String> {
        self.fake
            .sent()
            .iter()
            .filter(|s| s.chat_id == CHAT && s.msg_type != "audio")
            .map(|s| s.content.to_string())
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
