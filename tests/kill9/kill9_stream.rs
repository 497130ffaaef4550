//! `kill -9` in the middle of a streamed answer, literally: the real binary with the OpenAI
//! backend, whose fake model writes part of a long answer and then stalls; the daemon is
//! SIGKILLed while the first part is already on the phone (WeChat: a chunk sent; Feishu: the
//! card sent), then restarted. The turn runs again and the answer ends whole: nothing lost,
//! nothing sent twice.

use crate::process_support;

use std::time::Duration;

use process_support::bed::{ProcessBed, feishu_login, openai_agent, wechat_login};
use process_support::changes::Changes;
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::secrets::Credentials;
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};

/// Real time allowed for anything to happen; nothing waits this long unless broken.
const PATIENCE: Duration = Duration::from_secs(30);
/// Paragraphs of the answer, 300 characters each.
const PARAGRAPHS: usize = 8;

fn paragraph(i: usize) -> String {
    let body: String = "写得很长 long text. "
        .repeat(20)
        .chars()
        .take(290)
        .collect();
    format!("[p{i:03}] {}", body.trim_end())
}

fn answer() -> String {
    (0..PARAGRAPHS)
        .map(paragraph)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The model's first reply: four paragraphs, then a stall the kill ends; the second (after
/// the restart) is the whole answer.
fn script(model: &FakeOpenAi) {
    let full = answer();
    let cut = (0..4).map(paragraph).collect::<Vec<_>>().join("\n\n").len() + 2;
    model.push(Reply::slow(
        &full[..cut],
        Duration::from_secs(3600),
        &full[cut..],
    ));
    model.push(Reply::text(&full));
}

fn tag_counts(texts: &[String]) -> Vec<usize> {
    let all = texts.concat();
    (0..PARAGRAPHS)
        .map(|i| all.matches(&format!("[p{i:03}]")).count())
        .collect()
}

fn non_blank(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

struct Bed {
    p: ProcessBed,
    model: FakeOpenAi,
}

impl Bed {
    /// The shared real-binary bed with the openai backend against the scripted fake model, the
    /// `account` table, and `creds` stored.
    async fn new(account: &str, table: &str, creds: &Credentials) -> Bed {
        let model = FakeOpenAi::start().await.expect("fake model");
        script(&model);
        let agent = openai_agent(&model.base_url(), "m", "SCV_KILL9_STREAM_KEY");
        let p = ProcessBed::new(
            |_| format!("{agent}{table}"),
            &[("SCV_KILL9_STREAM_KEY", "k")],
        );
        p.save_login(account, creds);
        Bed { p, model }
    }

    fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    /// Waits until `f` holds, checked again at each change of `platform` (the fake `f` reads)
    /// or of the model.
    async fn wait_until(&self, what: &str, platform: &dyn Changes, f: impl Fn() -> bool) {
        let on = [platform, &self.model];
        self.p
            .wait_until(PATIENCE, what, &on, || format!("log:\n{}", self.p.log()), f)
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_on_wechat_loses_nothing_and_doubles_nothing() {
    use scv_wechat::Endpoint;
    use scv_wechat::fake::FakeServer;
    const OWNER: &str = "owner@im.wechat";
    let fake = FakeServer::start().await.expect("fake ilink");
    let h = fake.handle();
    let creds = wechat_login(&fake, OWNER);
    let table = format!("[wechat.phone]\nbase_url = \"{}\"\n", fake.base_url());
    let bed = Bed::new("wechat:phone", &table, &creds).await;
    h.push_text(OWNER, "write a lot");
    let mut child = bed.spawn();
    bed.wait_until("the first chunk", &h, || !h.sent().is_empty())
        .await;
    assert_eq!(bed.model.requests().len(), 1, "the model is still writing");
    sigkill(&mut child);

    let mut child = bed.spawn();
    bed.wait_until("the rest of the answer", &h, || {
        tag_counts(&h.sent().into_iter().map(|m| m.text).collect::<Vec<_>>())
            .iter()
            .all(|n| *n >= 1)
    })
    .await;
    // One more poll: whatever else was queued would have gone out by then.
    let polls = h.requests_to(Endpoint::GetUpdates).len();
    bed.wait_until("another poll", &h, || {
        h.requests_to(Endpoint::GetUpdates).len() >= polls + 2
    })
    .await;
    terminate(&mut child);
    // A kill that beat the first chunk's record holds that chunk (WeChat may have shown it; the
    // fake did) and puts a note quoting its start in its place: not a second copy.
    let sent: Vec<String> = h
        .sent()
        .into_iter()
        .map(|m| m.text)
        .filter(|t| !t.contains("/again"))
        .collect();
    assert_eq!(tag_counts(&sent), vec![1; PARAGRAPHS], "{sent:?}");
    assert_eq!(non_blank(&sent.concat()), non_blank(&answer()));
    assert_eq!(bed.model.requests().len(), 2, "the turn ran again once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_on_feishu_finishes_the_same_card() {
    use scv_feishu::cardkit::ANSWER_ELEMENT;
    use scv_feishu::fake::{FakeConfig, FakeFeishu};
    const OWNER: &str = "ou_owner";
    let fake = FakeFeishu::start(FakeConfig::fast())
        .await
        .expect("fake feishu");
    let creds = feishu_login(&fake);
    let table = format!(
        "[feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\nowner = \"{OWNER}\"\n",
        fake.base_url()
    );
    let bed = Bed::new("feishu:work", &table, &creds).await;
    fake.push_p2p_text(OWNER, "write a lot");
    let mut child = bed.spawn();
    bed.wait_until("the card sent", &fake, || {
        fake.cards().first().is_some_and(|c| c.message_id.is_some())
    })
    .await;
    assert_eq!(bed.model.requests().len(), 1, "the model is still writing");
    sigkill(&mut child);

    let mut child = bed.spawn();
    bed.wait_until("streaming closed", &fake, || {
        fake.cards()
            .first()
            .is_some_and(|c| c.settings.last() == Some(&false))
    })
    .await;
    terminate(&mut child);
    let cards = fake.cards();
    assert_eq!(cards.len(), 1, "one card: {cards:?}");
    let card = &cards[0];
    assert_eq!(
        card.text(ANSWER_ELEMENT).as_deref(),
        Some(answer().as_str())
    );
    assert!(
        card.sequences.windows(2).all(|w| w[0] < w[1]),
        "{:?}",
        card.sequences
    );
    assert!(card.refused.is_empty(), "{:?}", card.refused);
    assert_eq!(
        fake.sent().len(),
        1,
        "the card is the only message, sent once"
    );
    assert_eq!(bed.model.requests().len(), 2, "the turn ran again once");
}
