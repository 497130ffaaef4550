//! Media both ways over real sockets: the fake iLink server with its strict CDN, the daemon
//! with the real WeChat adapter, and the agents' real backends against their fakes.

use crate::media_support;

use std::sync::Arc;

use media_support::{
    Bed, OWNER, PATIENCE, ScriptedAgent, file_item, file_item_raw, image_item, voice_item,
};
use scv_bridge::agent::{Agent, OpenAiAgent, OpenAiOptions, ScvAgent, ScvOptions, Transport};
use scv_bridge::testing::fake_openai::{FakeOpenAi, Reply};
use scv_bridge::testing::fake_scv::FakeScv;
use scv_wechat::cdn::MediaKey;
use scv_wechat::message::MessageItem;

/// Bytes that sniff as PNG, then noise: what the model must receive unchanged.
fn png(n: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..n).map(|i| (i * 31 % 251) as u8));
    v
}

fn openai(model: &FakeOpenAi) -> media_support::MakeAgent {
    let url = model.base_url();
    Arc::new(move |store| {
        let mut o = OpenAiOptions::new(url.clone(), "m");
        o.connect_timeout = None;
        let a: Arc<dyn Agent> = Arc::new(OpenAiAgent::new(o, store.clone()).expect("agent"));
        a
    })
}

fn scripted(agent: &Arc<ScriptedAgent>) -> media_support::MakeAgent {
    let agent = agent.clone();
    Arc::new(move |_| {
        let a: Arc<dyn Agent> = agent.clone();
        a
    })
}

#[tokio::test]
async fn an_owners_photo_reaches_the_model_as_an_image_part_with_its_bytes() {
    let model = FakeOpenAi::start().await.expect("model");
    let mut bed = Bed::new("", "").await;
    bed.start(openai(&model)).await;
    let photo = png(300_000);
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![MessageItem::text("what is this?"), image_item(&h, &photo)],
    );
    let sent = bed.wait_sent(1).await;
    let req = &model.requests()[0];
    assert_eq!(req.images.len(), 1, "one image part");
    assert!(
        req.images[0] == photo,
        "the model got the photo's exact bytes"
    );
    assert_eq!(req.image_types, vec!["image/png"]);
    assert!(sent[0].starts_with("echo: what is this?"), "{sent:?}");
    let files = bed.inbox_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("inbox/20"), "{files:?}");
    assert_eq!(
        std::fs::read(bed.workspace().join(&files[0])).expect("saved"),
        photo
    );
    bed.stop().await;
}

#[tokio::test]
async fn a_model_that_refuses_images_gets_the_path_and_is_remembered() {
    let model = FakeOpenAi::start().await.expect("model");
    model.respond_with(|r| {
        (!r.images.is_empty()).then(|| Reply::Status {
            status: 400,
            retry_after: None,
            body: r#"{"error":{"message":"This model does not support image inputs"}}"#.into(),
        })
    });
    let mut bed = Bed::new("", "").await;
    bed.start(openai(&model)).await;
    let h = bed.h();
    h.push_items(OWNER, vec![image_item(&h, &png(100))]);
    bed.wait_sent(1).await;
    h.push_items(OWNER, vec![image_item(&h, &png(200))]);
    bed.wait_sent(2).await;
    let reqs = model.requests();
    // Tried with the image, refused, retried with the path; the next turn goes straight to paths.
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    assert_eq!(reqs[0].images.len(), 1);
    assert!(reqs[1].images.is_empty() && reqs[2].images.is_empty());
    let last = &reqs[2].messages.last().expect("user").content;
    assert!(
        last.contains("[photo saved at ") && last.contains("/inbox/"),
        "{last}"
    );
    bed.stop().await;
}

#[tokio::test]
async fn a_pdf_lands_in_the_workspace_and_its_path_reaches_the_scv_agent() {
    let dir = tempfile::tempdir().expect("dir");
    let scv = FakeScv::start(&dir.path().join("agent.sock"))
        .await
        .expect("fake scv");
    let sock = scv.path().to_path_buf();
    let mut bed = Bed::new("", "").await;
    bed.start(Arc::new(move |_| {
        let mut o = ScvOptions::new(Transport::Socket(sock.clone()));
        o.turn_timeout = Some(std::time::Duration::from_secs(20));
        let a: Arc<dyn Agent> = Arc::new(ScvAgent::new(o));
        a
    }))
    .await;
    let pdf = b"%PDF-1.7 a report".repeat(1000);
    let h = bed.h();
    h.push_items(
        OWNER,
        vec![file_item(&h, "../../etc/report.pdf", &pdf, None)],
    );
    bed.wait_sent(1).await;
    let rec = scv.recorded();
    let files = bed.inbox_files();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].ends_with("/report.pdf"),
        "a safe name inside the inbox: {files:?}"
    );
    let saved = bed.workspace().join(&files[0]);
    assert_eq!(std::fs::read(&saved).expect("saved"), pdf);
    assert_eq!(rec.attachments, vec![vec![saved.display().to_string()]]);
    bed.stop().await;
}

#[tokio::test]
async fn a_voice_transcript_reaches_the_agent_as_text() {
    let agent = Arc::new(ScriptedAgent::default());
    *agent.answer.lock().expect("lock") = "heard".into();
    let mut bed = Bed::new("", "").await;
    bed.start(scripted(&agent)).await;
    bed.h()
        .push_items(OWNER, vec![voice_item("remind me at five")]);
    bed.wait_sent(1).await;
    let prompts = agent.prompts.lock().expect("lock").clone();
    assert!(prompts[0].contains("remind me at five"), "{prompts:?}");
    assert!(
        bed.inbox_files().is_empty(),
        "a voice note with no audio on the CDN saves nothing"
    );
    bed.stop().await;
}

#[tokio::test]
async fn an_answer_naming_a_workspace_image_arrives_as_that_image_and_outside_paths_are_refused() {
    let agent = Arc::new(ScriptedAgent::default());
    let mut bed = Bed::new("", "").await;
    let ws = bed.workspace();
    std::fs::create_dir_all(ws.join("out")).expect("mkdir");
    let chart = png(50_000);
    std::fs::write(ws.join("out/chart.png"), &chart).expect("write");
    std::fs::write(bed.dir.path().join("secret.txt"), b"secret").expect("write");
    *agent.answer.lock().expect("lock") =
        "Here is the chart: ![chart](out/chart.png) and [s](../secret.txt)".into();
    bed.start(scripted(&agent)).await;
    bed.h().push_text(OWNER, "chart please");
    let media = bed.h().wait_for_media(1, PATIENCE).await;
    assert_eq!(media.len(), 1);
    assert_eq!(media[0].item_type, 2, "sent as an image");
    assert!(media[0].bytes == chart, "the decrypted bytes are the file");
    let texts = bed.wait_sent(2).await;
    // The text first, with the refusal line, then the image.
    assert!(
        texts[0].contains("Could not send ../secret.txt: it is outside the workspace"),
        "{texts:?}"
    );
    assert_eq!(texts[1], "[image]");
    bed.settle().await;
    assert_eq!(bed.h().sent_media().len(), 1, "nothing more is sent");
    assert!(
        !bed.h()
            .sent()
            .iter()
            .any(|s| s.text.contains("secret\n") || s.text == "secret")
    );
    bed.stop().await;
}

#[tokio::test]
async fn oversized_and_malformed_media_give_a_clear_note_and_no_panic() {
    let agent = Arc::new(ScriptedAgent::default());
    *agent.answer.lock().expect("lock") = "ok".into();
    let mut bed = Bed::new("[media]\nmax_item_mb = 1\n", "").await;
    bed.start(scripted(&agent)).await;
    let h = bed.h();
    let key = MediaKey::random();
    // A wrong key (fixed, so the padding check is deterministic), a truncated ciphertext, a
    // huge declared size, and one really over the 1 MB cap.
    let wrong = h.cdn_put(&[1u8; 4000], Some(&MediaKey::from_bytes([1; 16])));
    let wrong = file_item_raw(
        wrong,
        MediaKey::from_bytes([2; 16]).base64_of_hex(),
        "wrong.pdf",
        None,
    );
    let cipher = scv_wechat::cdn::encrypt(&key, &[2u8; 4000]);
    let cut = h.cdn_put_raw(cipher[..cipher.len() - 7].to_vec());
    let cut = file_item_raw(cut, key.base64_of_hex(), "cut.pdf", None);
    let huge = file_item(&h, "huge.bin", b"tiny", Some("99999999999999".into()));
    let big = file_item(&h, "big.bin", &vec![0u8; 1_200_000], None);
    // Declared small, really over the cap: the note says what arrived, not the declared size.
    let liar = file_item(&h, "liar.bin", &vec![0u8; 1_200_000], Some("1000".into()));
    h.push_items(
        OWNER,
        vec![MessageItem::text("five files"), wrong, cut, huge, big, liar],
    );
    let sent = bed.wait_sent(1).await;
    let reply = &sent[0];
    assert!(
        reply.contains("(liar.bin was not passed to the agent: it is larger than the 1.0 MiB limit (`[media] max_item_mb`): the download stopped after 1.0 MiB.)"),
        "{reply}"
    );
    assert!(
        !reply.contains("1000 B"),
        "the declared size is not the size: {reply}"
    );
    for name in ["wrong.pdf", "cut.pdf", "huge.bin", "big.bin"] {
        assert!(
            reply.contains(&format!("({name} was not passed to the agent: ")),
            "{name}: {reply}"
        );
    }
    assert!(
        reply.contains("the download failed: the media does not decrypt"),
        "{reply}"
    );
    assert!(reply.contains("truncated"), "{reply}");
    assert!(
        reply.contains("over the 1.0 MiB limit (`[media] max_item_mb`)"),
        "{reply}"
    );
    assert!(reply.ends_with("ok"), "{reply}");
    let prompt = agent.prompts.lock().expect("lock")[0].clone();
    assert!(prompt.contains("[wrong.pdf was not saved]"), "{prompt}");
    assert!(bed.inbox_files().is_empty(), "{:?}", bed.inbox_files());
    bed.stop().await;
}

#[tokio::test]
async fn a_strangers_file_lands_only_in_a_per_sender_folder() {
    let agent = Arc::new(ScriptedAgent::default());
    *agent.answer.lock().expect("lock") = "thanks".into();
    let mut bed = Bed::new("", "senders = \"anyone\"").await;
    bed.start(scripted(&agent)).await;
    let h = bed.h();
    h.push_items(OWNER, vec![file_item(&h, "a.txt", b"owner's", None)]);
    bed.wait_sent(1).await;
    h.push_items(
        "stranger9@im.wechat",
        vec![file_item(&h, "a.txt", b"stranger's", None)],
    );
    bed.wait_sent(2).await;
    let files = bed.inbox_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let (theirs, ours): (Vec<&String>, Vec<&String>) = files
        .iter()
        .partition(|f| f.contains("/from-stranger9@im.wechat/"));
    assert_eq!((theirs.len(), ours.len()), (1, 1), "{files:?}");
    assert!(ours[0].ends_with("/a.txt") && theirs[0].ends_with("/a.txt"));
    let ws = bed.workspace();
    assert_eq!(
        std::fs::read(ws.join(theirs[0])).expect("read"),
        b"stranger's"
    );
    bed.stop().await;
}
