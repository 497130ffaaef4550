//! Loopback figures against the fake: a callback's trip to the account task, a whole reply's
//! round trip (callback in, answer acknowledged), and a stream's first visible text.
//!
//! `cargo run -p scv-wecom --example round_trip [--release]`

use std::time::{Duration, Instant};

use scv_wecom::fake::{FakeConfig, FakeWeCom};
use scv_wecom::{Connection, LinkState, Options, StreamReply};
use tokio_util::sync::CancellationToken;

const ROUNDS: usize = 200;

fn summary(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{name:<34} median {:>7.3} ms  p99 {:>7.3} ms  min {:>7.3} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 99 / 100]),
        ms(times[0])
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let fake = FakeWeCom::start(FakeConfig::default())
        .await
        .expect("fake starts");
    let conn = Connection::new(fake.credentials(), Options::with_url(fake.ws_url()));
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let cancel = CancellationToken::new();
    let runner = tokio::spawn({
        let (conn, cancel) = (conn.clone(), cancel.clone());
        async move { conn.run(tx, cancel).await }
    });
    let mut status = conn.status();
    status
        .wait_for(|s| s.state == LinkState::Connected)
        .await
        .expect("subscribed");

    let (mut inbound, mut whole, mut first_text) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..ROUNDS {
        let start = Instant::now();
        fake.push_text("ZhangSan", "a question");
        let delivery = rx.recv().await.expect("delivery");
        inbound.push(start.elapsed());
        let (_, handle) = delivery.journaled();
        let handle = handle.expect("a message handle");
        if i % 2 == 0 {
            conn.reply_text(&handle, "an answer").await.expect("reply");
            whole.push(start.elapsed());
        } else {
            let mut stream = StreamReply::new(conn.clone(), handle);
            stream.update("The first words").await.expect("first frame");
            first_text.push(start.elapsed());
            stream
                .finish("The first words, and the rest.")
                .await
                .expect("finish");
        }
    }
    println!("{ROUNDS} rounds over loopback against the fake:");
    summary("callback -> account task", inbound);
    summary("callback -> whole reply acked", whole);
    summary("callback -> first stream text acked", first_text);
    cancel.cancel();
    let _ = runner.await;
}
