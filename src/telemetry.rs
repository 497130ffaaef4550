//! Latency histograms the pipeline records as it works, for the metrics page.
//!
//! A leaf: the core records here without knowing the metrics page, and `metrics` (which renders
//! the page) reads the same families. One set per process, because Prometheus scrapes a process;
//! histograms only ever grow, so tests that share the process compare before and after.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

/// Labels of one series: `account = "wechat:phone"`.
pub type AccountLabels = Vec<(String, String)>;

/// A histogram family per account.
pub type PerAccount = Family<AccountLabels, Histogram, fn() -> Histogram>;

/// The families; their names and units are part of the metrics page and must stay stable.
pub struct Telemetry {
    /// From a message's turn starting to its answer stored: the agent's time, in seconds.
    pub turn_seconds: PerAccount,
    /// One outbox item's send to the platform, in seconds.
    pub send_seconds: PerAccount,
    /// From the platform handing a batch over (WeChat: the poll response's last byte; Feishu:
    /// the session handing it in) to its journal commit, in seconds: the window in which a crash
    /// loses a batch the platform considers delivered (WeChat).
    pub journal_commit_seconds: PerAccount,
}

/// 0.1 ms to about 3.3 s for the store and the platforms.
fn fast() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 16))
}

/// 10 ms to about 5.5 min for agent turns.
fn slow() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 16))
}

/// The process's families.
pub fn get() -> &'static Telemetry {
    static T: OnceLock<Telemetry> = OnceLock::new();
    T.get_or_init(|| Telemetry {
        turn_seconds: Family::new_with_constructor(slow),
        send_seconds: Family::new_with_constructor(fast),
        journal_commit_seconds: Family::new_with_constructor(fast),
    })
}

/// The labels naming `account`.
pub fn account(account: &str) -> AccountLabels {
    vec![("account".to_string(), account.to_string())]
}

/// Records one agent turn of `account`.
pub fn turn(account_key: &str, took: Duration) {
    get()
        .turn_seconds
        .get_or_create(&account(account_key))
        .observe(took.as_secs_f64());
}

/// Records one send of `account`.
pub fn send(account_key: &str, took: Duration) {
    get()
        .send_seconds
        .get_or_create(&account(account_key))
        .observe(took.as_secs_f64());
}

/// Records one journal commit of an inbound batch of `account`.
pub fn journal_commit(account_key: &str, took: Duration) {
    get()
        .journal_commit_seconds
        .get_or_create(&account(account_key))
        .observe(took.as_secs_f64());
}
