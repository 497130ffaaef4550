//! Media figures against the fakes on loopback, for WeChat and Feishu: time from a 5 MB photo's
//! arrival at the fake platform to the fake model's request carrying it (download, decrypt on
//! WeChat, save, encode, send), the upload time of a 5 MB file (WeChat: getuploadurl +
//! encrypted POST + sendmessage; Feishu: file upload + message), and the RSS growth while a
//! 100 MB file is downloaded (it must stream, not sit in memory).
//!
//! Run with `cargo bench --all-features --bench media` (add `--profile dev` for a debug build).
//! Prints figures; asserts nothing.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::feishu::build_with;
use scv_bridge::adapters::wechat::Tuning;
use scv_bridge::agent::{Agent, OpenAiAgent, OpenAiOptions};
use scv_bridge::config::{AccountSpec, AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::supervisor::{Component, ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::WechatFactory;
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_bridge::testing::wechat::image_item;
use scv_feishu::fake::{FakeConfig, FakeFeishu};
use scv_feishu::media::ResourceType;
use scv_wechat::Client;
use scv_wechat::cdn::MediaKey;
use scv_wechat::cdn_client::{MediaDownload, UploadKind, download_url, media_item};
use scv_wechat::fake::FakeServer;
use scv_wechat::media::CdnMedia;

const OWNER: &str = "owner0001@im.wechat";
const MB: usize = 1024 * 1024;
const ROUNDS: usize = 3;

struct FeishuFactory {
    ctx: PlatformParts,
}

impl ComponentFactory for FeishuFactory {
    fn build(&self, spec: &AccountSpec) -> Arc<dyn Component> {
        build_with(self.ctx.ports().port(spec), None)
    }
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn photo(n: usize, seed: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..n).map(|i| ((i + seed) * 31 % 251) as u8));
    v
}

fn write_config(dir: &Path, fake: &FakeServer) -> Config {
    std::fs::create_dir_all(dir.join("ws")).expect("workspace");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[wechat.phone]\nbase_url = \"{}\"\ncdn_base_url = \"{}\"\nworkspace = \"{}\"\n",
        dir.join("state").display(),
        dir.join("state/daemon.sock").display(),
        fake.base_url(),
        fake.handle().cdn_base_url(),
        dir.join("ws").display(),
    );
    let path = dir.join("config.toml");
    std::fs::write(&path, text).expect("config");
    let c = Credentials::default()
        .with(
            "bot_token",
            fake.handle().bot_token().expect("token").expose(),
        )
        .with("bot_id", fake.handle().bot_id())
        .with("owner_id", OWNER);
    CredentialStore::Files(dir.join("state/credentials"))
        .save("wechat:phone", &c)
        .expect("save");
    Config::load(&path).expect("load")
}

/// The parts of a daemon whose agent is the `openai` backend against `url`.
fn parts(url: &str, creds: &CredentialStore, store: &scv_bridge::store::Store) -> PlatformParts {
    let agent: Arc<dyn Agent> =
        Arc::new(OpenAiAgent::new(OpenAiOptions::new(url, "m"), store.clone()).expect("agent"));
    PlatformParts {
        credentials: creds.clone(),
        store: store.clone(),
        conversation: Conversation::new(store.clone(), agent),
        agent: AgentConfig::default(),
        mail: Default::default(),
    }
}

async fn photo_to_model() -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("dir");
    let fake = FakeServer::start().await.expect("fake");
    let model = FakeOpenAi::start().await.expect("model");
    let url = model.base_url();
    let make = move |creds: &CredentialStore, store: &scv_bridge::store::Store| {
        let ctx = parts(&url, creds, store);
        let tuning = Tuning {
            min_send_interval: Duration::from_millis(20),
            ..Tuning::default()
        };
        let f: Arc<dyn ComponentFactory> = Arc::new(WechatFactory { parts: ctx, tuning });
        f
    };
    let d = scv_bridge::daemon::start(
        write_config(dir.path(), &fake),
        make,
        LifecyclePolicy::default(),
    )
    .await
    .expect("daemon");
    let h = fake.handle();
    let mut times = Vec::new();
    for round in 0..ROUNDS {
        let bytes = photo(5 * MB, round);
        let item = image_item(&h, &bytes);
        let start = Instant::now();
        h.push_items(OWNER, vec![item]);
        tokio::time::timeout(Duration::from_secs(120), model.wait_requests(round + 1))
            .await
            .expect("the model was asked");
        times.push(start.elapsed());
        h.wait_for_sent(round + 1, Duration::from_secs(30)).await;
    }
    d.stop().await;
    times
}

async fn upload_5mb() -> Vec<Duration> {
    let fake = FakeServer::start().await.expect("fake");
    let h = fake.handle();
    let client = Client::new(&fake.base_url(), h.bot_token()).expect("client");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("file.bin");
    std::fs::write(&path, photo(5 * MB, 7)).expect("write");
    let user = "peer@im.wechat";
    let mut times = Vec::new();
    for i in 0..ROUNDS {
        h.push_text(user, "hi");
        let token = h.latest_context_token(user).expect("token");
        let start = Instant::now();
        let up = client
            .upload_media(&h.cdn_base_url(), &path, UploadKind::File, user)
            .await
            .expect("upload");
        client
            .send_media(
                user,
                Some(&token),
                media_item(UploadKind::File, &up, "file.bin"),
                &format!("b{i}"),
            )
            .await
            .expect("send");
        times.push(start.elapsed());
    }
    times
}

async fn rss_100mb() -> (u64, u64, Duration) {
    let fake = FakeServer::start().await.expect("fake");
    let h = fake.handle();
    let client = Client::new(&fake.base_url(), h.bot_token()).expect("client");
    let key = MediaKey::random();
    let param = h.cdn_put(&photo(100 * MB, 3), Some(&key));
    let dir = tempfile::tempdir().expect("dir");
    let d = MediaDownload {
        url: download_url(
            &h.cdn_base_url(),
            &CdnMedia {
                encrypt_query_param: Some(param),
                ..CdnMedia::default()
            },
        )
        .expect("url"),
        key: Some(key),
        max_bytes: 200 * MB as u64,
        size: None,
        md5: None,
    };
    // The fake holds its 100 MB ciphertext already: the baseline counts it, the peak adds
    // only what the download itself keeps.
    sampled(async {
        client
            .download_media(&d, &dir.path().join("big"))
            .await
            .expect("download");
    })
    .await
}

async fn feishu_photo_to_model() -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("dir");
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let model = FakeOpenAi::start().await.expect("model");
    std::fs::create_dir_all(dir.path().join("ws")).expect("workspace");
    let text = format!(
        "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n[feishu.work]\ndomain = \"{}\"\nsenders = \"owner\"\nowner = \"ou_owner\"\nworkspace = \"{}\"\n",
        dir.path().join("state").display(),
        dir.path().join("state/daemon.sock").display(),
        fake.base_url(),
        dir.path().join("ws").display(),
    );
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).expect("config");
    let creds = Credentials::default()
        .with("app_id", &fake.config().app_id)
        .with("app_secret", &fake.config().app_secret);
    CredentialStore::Files(dir.path().join("state/credentials"))
        .save("feishu:work", &creds)
        .expect("save");
    let url = model.base_url();
    let make = move |creds: &CredentialStore, store: &scv_bridge::store::Store| {
        let ctx = parts(&url, creds, store);
        let f: Arc<dyn ComponentFactory> = Arc::new(FeishuFactory { ctx });
        f
    };
    let config = Config::load(&path).expect("load");
    let d = scv_bridge::daemon::start(config, make, LifecyclePolicy::default())
        .await
        .expect("daemon");
    let mut times = Vec::new();
    for round in 0..ROUNDS {
        let bytes = photo(5 * MB, round);
        let start = Instant::now();
        fake.push_p2p_image("ou_owner", bytes);
        tokio::time::timeout(Duration::from_secs(120), model.wait_requests(round + 1))
            .await
            .expect("the model was asked");
        times.push(start.elapsed());
        let sent = fake
            .wait_until(Duration::from_secs(30), |f| f.sent().len() > round)
            .await;
        assert!(sent, "answered");
    }
    d.stop().await;
    times
}

async fn feishu_upload_5mb() -> Vec<Duration> {
    let fake = FakeFeishu::start(FakeConfig::default())
        .await
        .expect("fake");
    let client = scv_feishu::Client::new(scv_feishu::ClientOptions::new(
        fake.domain(),
        fake.credentials(),
    ))
    .expect("client");
    client.tenant_token().await.expect("token");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("file.bin");
    std::fs::write(&path, photo(5 * MB, 7)).expect("write");
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        let start = Instant::now();
        client
            .upload_file(&path, "file.bin", None)
            .await
            .expect("upload");
        times.push(start.elapsed());
    }
    times
}

async fn feishu_rss_100mb() -> (u64, u64, Duration) {
    let fake = FakeFeishu::start(FakeConfig::default())
        .await
        .expect("fake");
    let client = scv_feishu::Client::new(scv_feishu::ClientOptions::new(
        fake.domain(),
        fake.credentials(),
    ))
    .expect("client");
    client.tenant_token().await.expect("token");
    // Feishu serves at most 100 MB (`photo` adds an 8-byte header).
    let big = fake.push_p2p_file("ou_owner", "big.bin", photo(100 * MB - 8, 5));
    let dir = tempfile::tempdir().expect("dir");
    let dest = dir.path().join("big.bin");
    sampled(async {
        client
            .download_resource(
                &big.pushed.message_id,
                &big.keys[0],
                ResourceType::File,
                &dest,
                u64::MAX,
            )
            .await
            .expect("download");
    })
    .await
}

/// The RSS before `work` and its peak while `work` runs, in KiB, and how long it took.
async fn sampled(work: impl std::future::Future<Output = ()>) -> (u64, u64, Duration) {
    let base = rss_kib();
    let started = Instant::now();
    let peak = Arc::new(AtomicU64::new(base));
    let done = Arc::new(AtomicBool::new(false));
    let (p, dn) = (peak.clone(), done.clone());
    let sampler = std::thread::spawn(move || {
        while !dn.load(Ordering::Relaxed) {
            p.fetch_max(rss_kib(), Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    work.await;
    let took = started.elapsed();
    done.store(true, Ordering::Relaxed);
    sampler.join().expect("sampler");
    (base, peak.load(Ordering::Relaxed), took)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "optimized"
    };
    println!("media bench ({profile} build), {ROUNDS} rounds each, loopback fakes");
    let t = photo_to_model().await;
    println!(
        "WeChat: 5 MB photo, arrival at the fake to the model's request: median {:?} (all {t:?})",
        median(t.clone())
    );
    let t = feishu_photo_to_model().await;
    println!(
        "Feishu: 5 MB photo, arrival at the fake to the model's request: median {:?} (all {t:?})",
        median(t.clone())
    );
    let t = upload_5mb().await;
    println!(
        "WeChat: 5 MB file upload (getuploadurl + CDN POST + sendmessage): median {:?} (all {t:?})",
        median(t.clone())
    );
    let t = feishu_upload_5mb().await;
    println!(
        "Feishu: 5 MB file upload (POST /im/v1/files): median {:?} (all {t:?})",
        median(t.clone())
    );
    let (base, peak, took) = rss_100mb().await;
    println!(
        "WeChat: 100 MB download + decrypt in {took:?}: RSS {base} KiB before, peak {peak} KiB during (+{} KiB)",
        peak.saturating_sub(base)
    );
    let (base, peak, took) = feishu_rss_100mb().await;
    println!(
        "Feishu: 100 MB download in {took:?}: RSS {base} KiB before, peak {peak} KiB during (+{} KiB)",
        peak.saturating_sub(base)
    );
}
