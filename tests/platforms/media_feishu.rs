//! Feishu media through the real binary, over real sockets: the real Feishu adapter against the
//! Feishu fake and the real `openai` backend against the fake model. An owner's photo reaches
//! the model as an image part with its bytes; an answer naming `out/chart.png` arrives as that
//! image and paths outside the workspace are refused with a line; `kill -9` while a resource
//! download or an upload is in flight (frozen half way by a proxy in front of the fake) loses
//! nothing and sends nothing twice.

use crate::process_support;

use std::time::Duration;

use process_support::bed::{ProcessBed, feishu_login, files_below, openai_agent};
use process_support::changes::{Changes, Tree};
use process_support::hold::HoldingProxy;
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_feishu::cardkit::ANSWER_ELEMENT;
use scv_feishu::fake::{FakeConfig, FakeFeishu};

const PATIENCE: Duration = Duration::from_secs(30);
const OWNER: &str = "ou_owner";
const CHAT: &str = "oc_p2p_ou_owner";

struct Bed {
    p: ProcessBed,
    fake: FakeFeishu,
    proxy: HoldingProxy,
    model: FakeOpenAi,
    /// The workspace, watched: a partial download shows there and nowhere else.
    ws: Tree,
}

impl Bed {
    async fn new() -> Bed {
        let fake = FakeFeishu::start(FakeConfig::fast())
            .await
            .expect("fake feishu");
        let proxy = HoldingProxy::start(fake.base_url()).await;
        let model = FakeOpenAi::start().await.expect("fake model");
        let p = ProcessBed::new(
            |dir| {
                std::fs::create_dir_all(dir.join("ws/out")).expect("workspace");
                format!(
                    "{}[feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\nowner = \"{OWNER}\"\nworkspace = \"{}\"\n",
                    openai_agent(&model.base_url(), "m", "SCV_MEDIA_FEISHU_KEY"),
                    proxy.url(),
                    dir.join("ws").display(),
                )
            },
            &[("SCV_MEDIA_FEISHU_KEY", "k")],
        );
        p.save_login("feishu:work", &feishu_login(&fake));
        let ws = Tree::watch(&p.path("ws"));
        Bed {
            p,
            fake,
            proxy,
            model,
            ws,
        }
    }

    fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    fn report(&self) -> String {
        format!(
            "sent: {:?}\nmedia sent: {}\nresource requests: {}, upload requests: {}, held: {}\nmodel requests: {}\ninbox: {:?}\nlog:\n{}",
            self.texts(),
            self.fake.sent_media().len(),
            self.fake.resource_requests(),
            self.fake.upload_requests(),
            self.proxy.held(),
            self.model.requests().len(),
            self.inbox(),
            self.p.log()
        )
    }

    async fn wait_until(&self, what: &str, f: impl FnMut() -> bool) {
        let on: [&dyn Changes; 4] = [&self.fake, &self.model, &self.proxy, &self.ws];
        self.p
            .wait_until(PATIENCE, what, &on, || self.report(), f)
            .await;
    }

    /// The texts sent to the owner's chat, in order.
    /// The texts sent to the chat: plain messages, and the final text of a card an answer
    /// streamed into (its message carries only the card's id).
    fn texts(&self) -> Vec<String> {
        let cards = self.fake.cards();
        self.fake
            .sent()
            .iter()
            .filter(|s| s.chat_id == CHAT && s.msg_type != "image" && s.msg_type != "file")
            .map(|s| {
                let card = s.content["data"]["card_id"].as_str();
                match card.and_then(|id| cards.iter().find(|c| c.card_id == id)) {
                    Some(c) => c.text(ANSWER_ELEMENT).unwrap_or_default(),
                    None => text_of(&s.content),
                }
            })
            .collect()
    }

    /// Every file below the inbox, hidden ones included.
    fn inbox(&self) -> Vec<String> {
        files_below(&self.p.path("ws/inbox"))
    }

    /// Waits until every event was ACKed and the daemon pinged once more after, so whatever it
    /// had queued would have gone out; then stops it cleanly.
    async fn drain_and_stop(&self, mut child: Daemon) {
        self.wait_until("every event ACKed", || self.fake.in_flight() == 0)
            .await;
        let pings = self.fake.pings();
        self.wait_until("another ping", || self.fake.pings() > pings)
            .await;
        terminate(&mut child);
    }
}

/// The readable text of a sent message: its `text`, or every text piece of a post or card
/// joined (how the answer is rendered is not what these tests are about).
fn text_of(content: &serde_json::Value) -> String {
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match v {
                        serde_json::Value::String(s) if k == "text" || k == "content" => {
                            out.push(s.clone())
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(content, &mut out);
    out.join("")
}

/// Bytes that sniff as PNG, then noise.
fn png(n: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..n).map(|i| (i * 29 % 251) as u8));
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owners_photo_reaches_the_model_as_an_image_part_with_its_bytes() {
    let bed = Bed::new().await;
    let photo = png(300_000);
    bed.fake.push_p2p_image(OWNER, photo.clone());
    let child = bed.spawn();
    bed.wait_until("the answer", || !bed.texts().is_empty())
        .await;
    bed.drain_and_stop(child).await;
    let reqs = bed.model.requests();
    assert_eq!(reqs.len(), 1, "one turn");
    assert_eq!(reqs[0].images.len(), 1, "one image part");
    assert!(
        reqs[0].images[0] == photo,
        "the model got the photo's exact bytes"
    );
    assert_eq!(reqs[0].image_types, vec!["image/png"]);
    let files = bed.inbox();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::read(bed.p.path("ws/inbox").join(&files[0])).expect("saved"),
        photo
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_naming_a_workspace_image_arrives_as_it_and_outside_paths_are_refused() {
    let bed = Bed::new().await;
    let chart = png(80_000);
    std::fs::write(bed.p.path("ws/out/chart.png"), &chart).expect("chart");
    let secret = bed.p.path("secret.txt");
    std::fs::write(&secret, b"secret").expect("secret");
    std::os::unix::fs::symlink(&secret, bed.p.path("ws/out/link.png")).expect("symlink");
    let answer = format!(
        "The chart: ![c](out/chart.png), [s](../secret.txt), [a]({}), ![l](out/link.png)",
        secret.display()
    );
    bed.model.respond_with(move |_| Some(Reply::text(&answer)));
    bed.fake.push_p2p_text(OWNER, "chart please");
    let child = bed.spawn();
    bed.wait_until("the image", || !bed.fake.sent_media().is_empty())
        .await;
    bed.drain_and_stop(child).await;
    let media = bed.fake.sent_media();
    assert_eq!(media.len(), 1, "only the workspace's file is sent");
    assert_eq!(media[0].msg_type, "image");
    assert!(media[0].upload.bytes[..] == chart[..], "the file's bytes");
    let texts = bed.texts();
    assert_eq!(texts.len(), 1, "{texts:?}");
    for refused in [
        "../secret.txt".to_string(),
        secret.display().to_string(),
        "out/link.png".to_string(),
    ] {
        assert!(
            texts[0].contains(&format!(
                "(Could not send {refused}: it is outside the workspace.)"
            )),
            "{refused} not refused in {texts:?}"
        );
    }
    assert!(
        !bed.fake
            .uploads()
            .iter()
            .any(|u| u.bytes[..] == b"secret"[..]),
        "the secret was never uploaded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_a_resource_download_loses_nothing_and_stores_the_file_once() {
    let bed = Bed::new().await;
    // Large enough that the frozen answer cannot carry it whole.
    let photo = png(2_000_000);
    bed.proxy.hold(Some("/resources/"));
    bed.fake.push_p2p_image(OWNER, photo.clone());
    let mut child = bed.spawn();
    // Killed with the first bytes on disk and the rest frozen in flight.
    bed.wait_until("a partial download on disk", || {
        bed.proxy.held() >= 1 && bed.inbox().iter().any(|f| f.ends_with(".part"))
    })
    .await;
    sigkill(&mut child);
    assert!(bed.model.requests().is_empty(), "killed before the turn");
    bed.proxy.hold(None);
    let child = bed.spawn();
    bed.wait_until("the answer", || !bed.texts().is_empty())
        .await;
    bed.drain_and_stop(child).await;
    let reqs = bed.model.requests();
    assert_eq!(reqs.len(), 1, "one turn");
    assert!(
        reqs[0].images == vec![photo.clone()],
        "the photo reached the model whole"
    );
    assert_eq!(bed.texts().len(), 1, "answered once: {:?}", bed.texts());
    let files = bed.inbox();
    assert_eq!(files.len(), 1, "stored once, no partial left: {files:?}");
    assert!(!files[0].contains("/."), "{files:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_an_upload_sends_the_file_once_after_the_restart() {
    let bed = Bed::new().await;
    let chart = png(1_000_000);
    std::fs::write(bed.p.path("ws/out/chart.png"), &chart).expect("chart");
    bed.model
        .respond_with(|_| Some(Reply::text("The chart: ![c](out/chart.png)")));
    bed.proxy.hold(Some("POST /open-apis/im/v1/images"));
    bed.fake.push_p2p_text(OWNER, "chart please");
    let mut child = bed.spawn();
    bed.wait_until("the upload to start", || bed.proxy.held() >= 1)
        .await;
    sigkill(&mut child);
    assert!(bed.fake.sent_media().is_empty());
    bed.proxy.hold(None);
    let child = bed.spawn();
    bed.wait_until("the image", || !bed.fake.sent_media().is_empty())
        .await;
    bed.drain_and_stop(child).await;
    let media = bed.fake.sent_media();
    assert_eq!(media.len(), 1, "sent once");
    assert!(media[0].upload.bytes[..] == chart[..]);
    let texts = bed.texts();
    assert_eq!(
        texts.iter().filter(|t| t.starts_with("The chart")).count(),
        1,
        "{texts:?}"
    );
    assert_eq!(
        bed.model.requests().len(),
        1,
        "the answer was stored, not asked again"
    );
}
