//! Media transfer figures against the fake on loopback: 5 MB file and image uploads, a 5 MB
//! image download, and the peak memory growth while a 100 MB resource streams to disk.
//!
//! `cargo run -p scv-feishu --example media_bench [--release]`

use std::time::{Duration, Instant};

use scv_feishu::fake::{FakeConfig, FakeFeishu};
use scv_feishu::media::ResourceType;
use scv_feishu::{Client, ClientOptions};

const FIVE_MB: usize = 5 << 20;
const ROUNDS: usize = 5;

fn png(len: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend((0..len - 8).map(|i| (i * 31 % 251) as u8));
    v
}

/// Peak resident memory of this process so far (Linux `VmHWM`), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn summary(name: &str, mut times: Vec<Duration>, bytes: usize) {
    times.sort();
    let median = times[times.len() / 2];
    let mb_s = bytes as f64 / (1 << 20) as f64 / median.as_secs_f64();
    println!(
        "{name:<28} median {:>8.1} ms  min {:>8.1} ms  ({mb_s:.0} MB/s)",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3
    );
}

#[tokio::main]
async fn main() {
    let fake = FakeFeishu::start(FakeConfig::default())
        .await
        .expect("fake");
    let client =
        Client::new(ClientOptions::new(fake.domain(), fake.credentials())).expect("client");
    client.tenant_token().await.expect("token");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("five.bin");
    let image = dir.path().join("five.png");
    std::fs::write(&file, png(FIVE_MB)).expect("write");
    std::fs::write(&image, png(FIVE_MB)).expect("write");

    let mut up_file = Vec::new();
    let mut up_image = Vec::new();
    let mut down = Vec::new();
    let pushed = fake.push_p2p_image("ou_owner", png(FIVE_MB));
    for i in 0..ROUNDS {
        let t = Instant::now();
        client
            .upload_file(&file, "five.bin", None)
            .await
            .expect("upload file");
        up_file.push(t.elapsed());
        let t = Instant::now();
        client.upload_image(&image).await.expect("upload image");
        up_image.push(t.elapsed());
        let dest = dir.path().join(format!("down{i}.png"));
        let t = Instant::now();
        client
            .download_resource(
                &pushed.pushed.message_id,
                &pushed.keys[0],
                ResourceType::Image,
                &dest,
                u64::MAX,
            )
            .await
            .expect("download");
        down.push(t.elapsed());
    }
    println!("Feishu media against the fake on loopback, {ROUNDS} rounds:");
    summary("upload 5 MB file", up_file, FIVE_MB);
    summary("upload 5 MB image", up_image, FIVE_MB);
    summary("download 5 MB image", down, FIVE_MB);

    // The fake holds the 100 MB itself; the client's growth on top of that is what streams.
    let big = fake.push_p2p_file("ou_owner", "big.bin", vec![7u8; 100 << 20]);
    let before = peak_rss_kib();
    let dest = dir.path().join("big.bin");
    let t = Instant::now();
    let got = client
        .download_resource(
            &big.pushed.message_id,
            &big.keys[0],
            ResourceType::File,
            &dest,
            u64::MAX,
        )
        .await
        .expect("download 100 MB");
    let took = t.elapsed();
    let after = peak_rss_kib();
    println!(
        "download 100 MB file         {:>8.1} ms, {} bytes; peak RSS {} -> {} KiB (growth {} KiB)",
        took.as_secs_f64() * 1e3,
        got.bytes,
        before.unwrap_or(0),
        after.unwrap_or(0),
        after.unwrap_or(0).saturating_sub(before.unwrap_or(0))
    );
}
