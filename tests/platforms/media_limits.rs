//! Media limits through a running daemon over real sockets (the fake iLink server with its CDN,
//! the real WeChat adapter, the real `openai` backend against the fake model): a photo over the
//! model's image limit reaches it smaller, in the same picture format; a malformed one goes as
//! its path with a note; an account's own `[wechat.<name>.media]` cap wins over `[media]`; and
//! partial downloads a crash left in the inbox are swept when the account starts.

use crate::media_support;

use std::io::Cursor;
use std::sync::Arc;

use media_support::{Bed, OWNER, ScriptedAgent, file_item, image_item};
use scv_bridge::agent::{Agent, OpenAiAgent, OpenAiOptions};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::message::MessageItem;

/// The `openai` backend against `model`, taking images up to `max_image_bytes` inline.
fn openai(model: &FakeOpenAi, max_image_bytes: u64) -> media_support::MakeAgent {
    let url = model.base_url();
    Arc::new(move |store| {
        let mut o = OpenAiOptions::new(url.clone(), "m");
        o.connect_timeout = None;
        o.max_image_bytes = max_image_bytes;
        let a: Arc<dyn Agent> = Arc::new(OpenAiAgent::new(o, store.clone()).expect("agent"));
        a
    })
}

/// A real, noisy PNG of `w` x `h` (noise keeps its size predictable).
fn real_png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let v = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) as u8;
        image::Rgb([v, v.wrapping_mul(7), v.wrapping_add(y as u8)])
    });
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("encode");
    out.into_inner()
}

#[tokio::test]
async fn a_photo_over_the_models_limit_reaches_it_smaller_in_the_same_format() {
    let model = FakeOpenAi::start().await.expect("model");
    let photo = real_png(600, 400);
    let limit = 200_000u64;
    assert!(photo.len() as u64 > 2 * limit, "{}", photo.len());
    let mut bed = Bed::new("", "").await;
    bed.start(openai(&model, limit)).await;
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![MessageItem::text("what is this?"), image_item(&h, &photo)],
    );
    bed.wait_sent(1).await;
    let req = &model.requests()[0];
    assert_eq!(req.images.len(), 1, "one image part");
    assert_eq!(req.image_types, vec!["image/png"]);
    let sent = &req.images[0];
    assert!(sent.len() as u64 <= limit, "{} bytes", sent.len());
    assert_eq!(
        image::guess_format(sent).expect("a picture"),
        image::ImageFormat::Png
    );
    let back = image::load_from_memory(sent).expect("decodes");
    assert!(
        back.width() < 600 && back.width() >= 100,
        "{}",
        back.width()
    );
    let ratio = back.width() as f64 / back.height() as f64;
    assert!((ratio - 1.5).abs() < 0.05, "the same picture: {ratio}");
    // The saved file is the sender's, untouched.
    let files = bed.inbox_files();
    assert_eq!(
        std::fs::read(bed.workspace().join(&files[0])).expect("saved"),
        photo
    );
    bed.stop().await;
}

#[tokio::test]
async fn a_malformed_photo_over_the_limit_goes_as_its_path_with_a_note() {
    let model = FakeOpenAi::start().await.expect("model");
    let mut broken = real_png(600, 400);
    broken.truncate(broken.len() / 2);
    let mut bed = Bed::new("", "").await;
    bed.start(openai(&model, 100_000)).await;
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![MessageItem::text("look"), image_item(&h, &broken)],
    );
    let sent = bed.wait_sent(1).await;
    assert!(sent[0].starts_with("echo: look"), "{sent:?}");
    let req = &model.requests()[0];
    assert!(req.images.is_empty(), "no image part");
    let last = &req.messages.last().expect("user").content;
    assert!(
        last.contains("[photo saved at ")
            && last.contains("; not shown as an image: it could not be read as an image"),
        "{last}"
    );
    bed.stop().await;
}

#[tokio::test]
async fn an_accounts_own_media_cap_wins_over_the_global_one() {
    let agent = Arc::new(ScriptedAgent::default());
    *agent.answer.lock().expect("lock") = "ok".into();
    let mut bed = Bed::new(
        "[media]\nmax_item_mb = 100\n",
        "[wechat.phone.media]\nmax_item_mb = 1\n",
    )
    .await;
    let a = agent.clone();
    bed.start(Arc::new(move |_| {
        let a: Arc<dyn Agent> = a.clone();
        a
    }))
    .await;
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![
            MessageItem::text("two files"),
            file_item(&h, "big.bin", &vec![7u8; 1_200_000], None),
            file_item(&h, "small.txt", b"fits", None),
        ],
    );
    let sent = bed.wait_sent(1).await;
    assert!(
        sent[0].contains("(big.bin was not passed to the agent: ")
            && sent[0].contains("over the 1.0 MiB limit (`[wechat.phone.media] max_item_mb`)"),
        "{sent:?}"
    );
    let files = bed.inbox_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].ends_with("/small.txt"), "{files:?}");
    bed.stop().await;
}

#[tokio::test]
async fn partial_downloads_a_crash_left_are_swept_when_the_account_starts() {
    let agent = Arc::new(ScriptedAgent::default());
    *agent.answer.lock().expect("lock") = "ok".into();
    let mut bed = Bed::new("", "").await;
    let day = bed.workspace().join("inbox/2026-11-30");
    std::fs::create_dir_all(day.join("from-x")).expect("mkdir");
    let left = [day.join(".photo.jpg.part"), day.join("from-x/.a.pdf.part")];
    let kept = [day.join("photo.jpg"), day.join(".notes")];
    for f in left.iter().chain(&kept) {
        std::fs::write(f, b"x").expect("write");
    }
    // Written before this test process started: left by an earlier run.
    let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for f in left.iter().chain(&kept) {
        std::fs::File::options()
            .write(true)
            .open(f)
            .and_then(|f| f.set_modified(earlier))
            .expect("mtime");
    }
    let a = agent.clone();
    bed.start(Arc::new(move |_| {
        let a: Arc<dyn Agent> = a.clone();
        a
    }))
    .await;
    // Once the account answers it is attached; the barrier then waits for its start-up work.
    bed.h().push_text(OWNER, "hi");
    bed.wait_sent(1).await;
    bed.settle().await;
    for f in &left {
        assert!(!f.exists(), "{} was left", f.display());
    }
    for f in &kept {
        assert!(f.exists(), "{} was swept", f.display());
    }
    bed.stop().await;
}
