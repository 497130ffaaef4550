//! Chromium driven over WebDriver (fantoccini): a chromedriver per test, headless sessions in
//! a language, and waits on the page as it changes.

use std::process::Stdio;

use fantoccini::{Client, ClientBuilder, Locator};

use crate::support::*;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const INSTALL: &str = "apt-get install -y chromium chromium-driver";

/// A chromedriver process, killed with the test.
pub struct Driver {
    _process: tokio::process::Child,
    url: String,
}

impl Driver {
    /// Starts chromedriver on a free port; fails (never skips) when Chromium is not installed.
    pub async fn start() -> Driver {
        for need in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                std::path::Path::new(need).exists(),
                "{need} is missing: the browser tests need Chromium; as root run `{INSTALL}`"
            );
        }
        let port = free_port();
        let process = tokio::process::Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER}: {e}; run `{INSTALL}`"));
        Driver {
            _process: process,
            url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// A headless browser session whose `Accept-Language` is `languages`.
    pub async fn browser(&self, languages: &str) -> Client {
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            serde_json::json!({
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
                "prefs": { "intl.accept_languages": languages },
            }),
        );
        let builder = {
            let mut b = ClientBuilder::rustls().expect("TLS roots");
            b.capabilities(caps);
            b
        };
        // chromedriver answers once it listens: each refused connection is a wait for that.
        within(
            async {
                loop {
                    match builder.connect(&self.url).await {
                        Ok(c) => return c,
                        Err(fantoccini::error::NewSessionError::NotW3C(v)) => {
                            panic!("chromedriver is not a W3C driver: {v}")
                        }
                        Err(_) => tokio::task::yield_now().await,
                    }
                }
            },
            "chromedriver",
        )
        .await
    }
}

pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
    probe.local_addr().expect("addr").port()
}

/// Waits until `css` matches an element of the page (the browser is asked as it changes).
pub async fn wait_for(browser: &Client, css: &str) -> fantoccini::elements::Element {
    wait_for_at(browser, Locator::Css(css)).await
}

/// Clicks the element `css` matches, once it shows. The page's live parts (questions, account
/// rows) are replaced when the daemon's state changes, so an element found a moment ago may be
/// gone by the click: then it is found again, a few times at most.
pub async fn click(browser: &Client, css: &str) {
    for _ in 0..5 {
        match wait_for(browser, css).await.click().await {
            Ok(()) => return,
            Err(fantoccini::error::CmdError::Standard(e))
                if e.error == fantoccini::error::ErrorStatus::StaleElementReference => {}
            Err(e) => panic!("cannot click {css}: {e}"),
        }
    }
    panic!("{css} was replaced under every click");
}

/// Waits until `locator` matches an element of the page.
pub async fn wait_for_at(browser: &Client, locator: Locator<'_>) -> fantoccini::elements::Element {
    browser
        .wait()
        .at_most(PATIENCE)
        .for_element(locator)
        .await
        .unwrap_or_else(|e| panic!("{locator:?} never showed: {e}"))
}
