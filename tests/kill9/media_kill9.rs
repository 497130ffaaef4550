//! `kill -9` during a media download and during an upload, literally: the real binary with the
//! real WeChat adapter and OpenAI backend, SIGKILLed while the fake CDN holds the transfer, then
//! restarted. Nothing is lost, no file is stored twice, nothing is sent twice.

use crate::process_support;

use std::time::Duration;

use process_support::bed::{ProcessBed, files_below, openai_agent, wechat_login};
use process_support::{Daemon, sigkill, terminate};
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_bridge::testing::wechat::image_item;
use scv_wechat::Endpoint;
use scv_wechat::fake::{FakeHandle, FakeServer, UploadFault};

const PATIENCE: Duration = Duration::from_secs(30);
const OWNER: &str = "owner@im.wechat";

struct Bed {
    p: ProcessBed,
    fake: FakeServer,
    model: FakeOpenAi,
}

impl Bed {
    async fn new() -> Bed {
        let fake = FakeServer::start().await.expect("fake ilink");
        let model = FakeOpenAi::start().await.expect("fake model");
        let p = ProcessBed::new(
            |dir| {
                std::fs::create_dir_all(dir.join("ws/out")).expect("workspace");
                format!(
                    "{}[wechat.phone]\nbase_url = \"{}\"\ncdn_base_url = \"{}\"\nworkspace = \"{}\"\n",
                    openai_agent(&model.base_url(), "m", "SCV_MEDIA_KEY"),
                    fake.base_url(),
                    fake.handle().cdn_base_url(),
                    dir.join("ws").display(),
                )
            },
            &[("SCV_MEDIA_KEY", "k")],
        );
        p.save_login("wechat:phone", &wechat_login(&fake, OWNER));
        Bed { p, fake, model }
    }

    fn h(&self) -> FakeHandle {
        self.fake.handle()
    }

    fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    /// Every file below the inbox, hidden ones included (a leftover partial would show).
    fn inbox(&self) -> Vec<String> {
        files_below(&self.p.path("ws/inbox"))
    }

    async fn wait_until(&self, what: &str, f: impl FnMut() -> bool) {
        let report = || {
            format!(
                "sent {:?}; inbox {:?}\nlog:\n{}",
                self.h()
                    .sent()
                    .into_iter()
                    .map(|s| s.text)
                    .collect::<Vec<_>>(),
                self.inbox(),
                self.p.log()
            )
        };
        self.p
            .wait_until(PATIENCE, what, &[&self.fake, &self.model], report, f)
            .await;
    }

    /// Waits for one more poll after now, so whatever was queued would have gone out.
    async fn one_more_poll(&self) {
        let polls = self.h().requests_to(Endpoint::GetUpdates).len();
        self.wait_until("another poll", || {
            self.h().requests_to(Endpoint::GetUpdates).len() >= polls + 2
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_a_download_loses_nothing_and_stores_the_file_once() {
    let bed = Bed::new().await;
    let h = bed.h();
    let photo: Vec<u8> = b"\x89PNG\r\n\x1a\n"
        .iter()
        .copied()
        .chain((0..200_000u32).map(|i| (i % 253) as u8))
        .collect();
    let item = image_item(&h, &photo);
    h.cdn_download_fault(0);
    h.push_items(OWNER, vec![item]);
    let mut child = bed.spawn();
    bed.wait_until("the download to start", || h.cdn_requests().0 >= 1)
        .await;
    sigkill(&mut child);
    assert!(bed.model.requests().is_empty(), "killed before the turn");
    let mut child = bed.spawn();
    bed.wait_until("the answer", || !h.sent().is_empty()).await;
    bed.one_more_poll().await;
    terminate(&mut child);
    let reqs = bed.model.requests();
    assert_eq!(reqs.len(), 1, "one turn");
    assert!(
        reqs[0].images == vec![photo.clone()],
        "the photo reached the model whole"
    );
    assert_eq!(h.sent().len(), 1, "answered once");
    let files = bed.inbox();
    assert_eq!(files.len(), 1, "stored once, no partial left: {files:?}");
    assert!(!files[0].contains("/."), "{files:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_an_upload_sends_the_file_once_after_the_restart() {
    let bed = Bed::new().await;
    let h = bed.h();
    let chart: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
    std::fs::write(bed.p.path("ws/out/chart.png"), &chart).expect("write");
    bed.model
        .respond_with(|_| Some(Reply::text("The chart: ![c](out/chart.png)")));
    h.cdn_upload_fault(UploadFault::Hang);
    h.push_text(OWNER, "chart please");
    let mut child = bed.spawn();
    bed.wait_until("the upload to start", || h.cdn_requests().1 >= 1)
        .await;
    sigkill(&mut child);
    assert!(h.sent_media().is_empty());
    let mut child = bed.spawn();
    bed.wait_until("the image", || !h.sent_media().is_empty())
        .await;
    bed.one_more_poll().await;
    terminate(&mut child);
    let media = h.sent_media();
    assert_eq!(media.len(), 1, "sent once");
    assert!(media[0].bytes == chart);
    let texts: Vec<String> = h.sent().into_iter().map(|s| s.text).collect();
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
