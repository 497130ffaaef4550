//! The newcomer walk, in a real browser against the real binary: `scv-bridge run` with no
//! configuration and an empty state directory, a one-time link from `scv-bridge console`, the
//! model form (a fake OpenAI-compatible endpoint), "add a chat" for WeChat (its address
//! question answered with the fake's), the scan (the fake confirms it), and the first answer
//! reaching the fake phone. It prints how long each step took and saves a screenshot of each
//! page under `target/console-walk/` (not committed).
//!
//! The daemon serves its console on the built-in address (127.0.0.1:7860), as a newcomer's
//! does, or on a free port when something else holds that one (as a first run does).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{Client, Locator};
use scv_bridge::testing::fake_openai::FakeOpenAi;
use scv_wechat::fake::FakeServer;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::driver::*;
use crate::support::*;

const ACCOUNT: &str = "wechat:phone";

/// Step timings and screenshots.
struct Walk {
    browser: Client,
    shots: PathBuf,
    last: Instant,
    steps: Vec<(String, Duration)>,
}

impl Walk {
    /// Ends the step `name` now, with a screenshot of the page as it is.
    async fn step(&mut self, name: &str) {
        let took = self.last.elapsed();
        let n = self.steps.len() + 1;
        let png = self.browser.screenshot().await.expect("screenshot");
        let file = self
            .shots
            .join(format!("{n:02}-{}.png", name.replace(' ', "-")));
        std::fs::write(&file, png).expect("save the screenshot");
        self.steps.push((name.to_string(), took));
        self.last = Instant::now();
    }

    fn report(&self) {
        let total: Duration = self.steps.iter().map(|(_, d)| *d).sum();
        println!("newcomer walk (screenshots in {}):", self.shots.display());
        for (i, (name, took)) in self.steps.iter().enumerate() {
            println!("  {:>2}. {name:<34} {:>7.2} s", i + 1, took.as_secs_f64());
        }
        println!("      {:<34} {:>7.2} s", "total", total.as_secs_f64());
    }
}

/// `scv-bridge --config FILE ARGS...` with the walk's empty XDG directories.
fn bridge(config: &Path, home: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_scv-bridge"));
    cmd.arg("--config")
        .arg(config)
        .args(args)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("SCV_BRIDGE_CONFIG")
        .env_remove("OPENAI_API_KEY")
        .kill_on_drop(true);
    cmd
}

/// Where the screenshots go: `target/console-walk/`.
fn shots_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.parent().unwrap_or(tmp).join("console-walk");
    std::fs::create_dir_all(&dir).expect("the screenshot folder");
    dir
}

#[tokio::test]
async fn a_newcomer_walks_from_nothing_to_the_first_answer() {
    let home = tempfile::tempdir().expect("tempdir");
    let config = home.path().join("config.toml");
    let model = FakeOpenAi::start().await.expect("fake model");
    let phone_server = FakeServer::start().await.expect("fake WeChat");
    let phone = phone_server.handle();
    let driver = Driver::start().await;
    let started = Instant::now();

    // 1. The README's first command, with nothing set up. Another program (or test) may hold the built-in console address: a first run then
    // serves its console on a free port, and `console` prints that link.
    let mut daemon = first_run(&config, home.path()).await;
    let link = one_time_link(&config, home.path()).await;
    let first_run_took = started.elapsed();

    // 2. The one-time link.
    // Chromium's own start is the browser's, not the bridge's: timed apart.
    let browser_started = Instant::now();
    let browser = driver.browser("en-US").await;
    // Tall enough that a screenshot holds the whole page.
    browser
        .set_window_size(1280, 2400)
        .await
        .expect("window size");
    let mut walk = Walk {
        browser: browser.clone(),
        shots: shots_dir(),
        last: Instant::now(),
        steps: Vec::new(),
    };
    println!(
        "first run (`run`, then `console` for the link): {:.2} s, console on {}; chromium: {:.2} s",
        first_run_took.as_secs_f64(),
        link.split('/').nth(2).unwrap_or_default(),
        browser_started.elapsed().as_secs_f64()
    );
    browser.goto(&link).await.expect("open the link");
    wait_for(&browser, "form.agent").await;
    walk.step("console opened").await;

    // 3. The model.
    let base = wait_for(&browser, "form.agent input[name=\"base_url\"]").await;
    base.clear().await.expect("clear");
    base.send_keys(&model.base_url())
        .await
        .expect("type the address");
    wait_for(&browser, "form.agent input[name=\"model\"]")
        .await
        .send_keys("walk-model")
        .await
        .expect("type the model");
    wait_for(&browser, "form.agent button")
        .await
        .click()
        .await
        .expect("save");
    let saved = wait_for(&browser, "form.agent p.done").await;
    assert!(saved.text().await.expect("text").contains("next message"));
    walk.step("model tested and saved").await;

    // 4. Add a chat: WeChat, at the fake's address.
    let wechat = "details.chat[data-channel=\"wechat\"]";
    wait_for(&browser, &format!("{wechat} summary"))
        .await
        .click()
        .await
        .expect("open");
    wait_for(&browser, &format!("{wechat} input[name=\"q_base_url\"]"))
        .await
        .send_keys(&phone_server.base_url())
        .await
        .expect("type the address");
    wait_for(&browser, &format!("{wechat} form.chat button"))
        .await
        .click()
        .await
        .expect("add");
    let row = format!("tr[data-account=\"{ACCOUNT}\"]");
    wait_for(&browser, &row).await;
    walk.step("chat added").await;

    // 5. The scan: the code on the page, the fake phone confirms it.
    wait_for(&browser, &format!("{row} form.scan button"))
        .await
        .click()
        .await
        .expect("log in");
    wait_for(&browser, "#scan .qr svg").await;
    walk.step("code shown").await;
    assert!(phone.wait_for_qr(1, PATIENCE).await, "a code was issued");
    phone.qr_confirm(OWNER).expect("a code to confirm");
    wait_for(
        &browser,
        &format!("{row} td.state[data-state=\"connected\"]"),
    )
    .await;
    walk.step("scanned and connected").await;

    // 6. The first message from the phone, answered by the model.
    let sent_before = phone.sent().len();
    phone.push_text(OWNER, "hello from a newcomer");
    let answer = phone
        .wait_for_sent_where(sent_before, PATIENCE, |m| {
            m.text.contains("echo: hello from a newcomer")
        })
        .await;
    assert!(answer.is_some(), "answered: {:?}", phone.sent());
    assert!(model.requests().iter().all(|r| r.model == "walk-model"));
    browser.refresh().await.expect("reload the page");
    wait_for_at(&browser, Locator::Css("#agent")).await;
    walk.step("first answer on the phone").await;
    walk.report();

    browser.close().await.expect("close");
    stop(&mut daemon).await;
}

/// A first run whose built-in console address is taken (by this test, or already by another
/// program: taken either way) serves its console on a free port, and its link works.
#[tokio::test]
async fn a_first_run_whose_console_address_is_taken_serves_it_on_a_free_port() {
    let home = tempfile::tempdir().expect("tempdir");
    let config = home.path().join("config.toml");
    let _held = std::net::TcpListener::bind("127.0.0.1:7860").ok();
    let mut daemon = first_run(&config, home.path()).await;
    let link = one_time_link(&config, home.path()).await;
    let served = link.split('/').nth(2).unwrap_or_default().to_string();
    assert!(
        served.starts_with("127.0.0.1:") && served != "127.0.0.1:7860",
        "{served}"
    );
    let answer = http().get(&link).send().await.expect("open the link");
    assert_eq!(answer.status(), 303, "the link opens a session");
    stop(&mut daemon).await;
    assert!(!config.exists(), "nothing is written without the owner");
}

/// `scv-bridge run` with no file, once it has said where to set it up.
async fn first_run(config: &Path, home: &Path) -> tokio::process::Child {
    let mut daemon = bridge(config, home, &["run"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("scv-bridge run");
    let mut lines = BufReader::new(daemon.stdout.take().expect("stdout")).lines();
    while let Some(line) = lines.next_line().await.expect("read") {
        if line.contains("Set it up in the console") {
            return daemon;
        }
    }
    panic!("the daemon ended before it said where to set it up");
}

/// The link `scv-bridge console` prints.
async fn one_time_link(config: &Path, home: &Path) -> String {
    let out = bridge(config, home, &["console"])
        .output()
        .await
        .expect("scv-bridge console");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    stdout.lines().next().expect("a link").to_string()
}

/// Stops the daemon as a service manager does (SIGTERM) and checks it ended cleanly.
async fn stop(daemon: &mut tokio::process::Child) {
    // SAFETY: the child's pid; SIGTERM is its documented stop.
    if let Some(pid) = daemon.id() {
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    }
    let ended = within(daemon.wait(), "the daemon to stop")
        .await
        .expect("wait");
    assert!(ended.success(), "{ended:?}");
}
