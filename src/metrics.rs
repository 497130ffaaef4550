//! The Prometheus page over HTTP (`metrics_listen`), built with prometheus-client: counts,
//! states and latencies only, never text. Family names are what dashboards query: keep them.

use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::protocol::{AgentHealth, AgentState, ComponentHealth, ComponentState};

/// The content type of the OpenMetrics text the page is written in.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every state an account can report, so each gets a 0/1 series.
const STATES: [ComponentState; 8] = [
    ComponentState::Disabled,
    ComponentState::Starting,
    ComponentState::Connected,
    ComponentState::Disconnected,
    ComponentState::Backoff,
    ComponentState::Stopping,
    ComponentState::Stopped,
    ComponentState::Failed,
];

type Labels = Vec<(String, String)>;

/// What one scrape shows, read by the daemon just before it renders.
#[derive(Default)]
pub struct Snapshot {
    /// Every account's health.
    pub components: Vec<ComponentHealth>,
    /// Pipeline counters `(account, name, value)` (`received`, `dropped_<reason>`, ...).
    pub counters: Vec<(String, String, u64)>,
    /// Confirm questions by state.
    pub confirm: Vec<(String, u64)>,
    /// The agent, when the pipeline runs.
    pub agent: Option<AgentHealth>,
    /// Outbox items waiting, by account.
    pub outbox_depth: Vec<(String, u64)>,
    /// The bridge's own messages to the owner by delivery state (with the pipeline).
    pub deliveries: Option<crate::protocol::DeliveryCounts>,
    /// Now, Unix seconds (the oldest waiting item's age).
    pub now_unix_seconds: u64,
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn gauge_family() -> Family<Labels, Gauge> {
    Family::default()
}

fn counter_family() -> Family<Labels, Counter> {
    Family::default()
}

/// The page for `snap`, with the process's latency histograms.
pub fn render(snap: &Snapshot) -> String {
    let mut reg = Registry::with_prefix("scv_bridge");
    reg.register(
        "build",
        "The running build: version and commit",
        Info::new(vec![
            ("version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
            ("commit".to_string(), env!("SCV_BRIDGE_COMMIT").to_string()),
        ]),
    );
    if let Some(agent) = &snap.agent {
        let up = gauge_family();
        up.get_or_create(&labels(&[("backend", &agent.backend)]))
            .set(i64::from(agent.state == AgentState::Ok));
        reg.register(
            "agent_up",
            "1 while the agent answers (configured, and its last turn did not fail)",
            up,
        );
    }
    let state = gauge_family();
    let restarts = counter_family();
    for h in &snap.components {
        for s in STATES {
            state
                .get_or_create(&labels(&[("account", &h.id), ("state", s.as_str())]))
                .set(i64::from(h.state == s));
        }
        restarts
            .get_or_create(&labels(&[("account", &h.id)]))
            .inc_by(h.restarts);
    }
    reg.register("account_state", "1 for the state each account is in", state);
    reg.register(
        "account_restarts",
        "Restarts since the daemon started",
        restarts,
    );
    register_counters(&mut reg, &snap.counters);
    register_mail(&mut reg, &snap.components);
    let confirm = gauge_family();
    for (state, n) in &snap.confirm {
        confirm
            .get_or_create(&labels(&[("state", state)]))
            .set(*n as i64);
    }
    reg.register("confirm_questions", "Confirm questions by state", confirm);
    let depth = gauge_family();
    // Every chat account has a series (0 when nothing waits), so a dashboard sees it drain.
    for h in snap.components.iter().filter(|h| h.mail.is_none()) {
        depth.get_or_create(&labels(&[("account", &h.id)])).set(0);
    }
    for (account, n) in &snap.outbox_depth {
        depth
            .get_or_create(&labels(&[("account", account)]))
            .set(*n as i64);
    }
    reg.register(
        "outbox_depth",
        "Messages stored and waiting to be sent, by account",
        depth,
    );
    if let Some(d) = &snap.deliveries {
        register_deliveries(&mut reg, d, snap.now_unix_seconds);
    }
    let t = crate::telemetry::get();
    reg.register(
        "turn_seconds",
        "Agent turns: from a message's turn starting to its answer",
        t.turn_seconds.clone(),
    );
    reg.register(
        "send_seconds",
        "One send to the platform",
        t.send_seconds.clone(),
    );
    reg.register(
        "journal_commit_seconds",
        "From the platform handing a batch over (WeChat: the poll response) to its journal commit",
        t.journal_commit_seconds.clone(),
    );
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, &reg).is_err() {
        // Writing to a String cannot fail; an encoder bug shows as an empty page, not a panic.
        tracing::error!("cannot encode the metrics page");
        return String::new();
    }
    out
}

/// The bridge's own messages to the owner: open ones by state, settled ones of the last 24 h,
/// and how long the oldest waiting one has waited (0 when none waits).
fn register_deliveries(reg: &mut Registry, d: &crate::protocol::DeliveryCounts, now: u64) {
    let family = gauge_family();
    for (state, n) in [
        ("queued", d.queued),
        ("waiting", d.waiting),
        ("sent", d.sent),
        ("unconfirmed", d.unconfirmed),
        ("moved", d.moved),
        ("failed", d.failed),
    ] {
        family
            .get_or_create(&labels(&[("state", state)]))
            .set(n as i64);
    }
    reg.register(
        "owner_messages",
        "The bridge's own messages to the owner (questions, digests, sends) by delivery state; sent, unconfirmed, moved and failed over the last 24 hours",
        family,
    );
    let oldest = Gauge::<i64>::default();
    if let Some(w) = &d.oldest_waiting {
        oldest.set(now.saturating_sub(w.since_unix_seconds) as i64);
    }
    reg.register(
        "owner_oldest_waiting_seconds",
        "How long the oldest waiting message to the owner has waited",
        oldest,
    );
}

/// The pipeline's counters as families: received, answered, sent, dropped by reason, send
/// failures by class.
fn register_counters(reg: &mut Registry, counters: &[(String, String, u64)]) {
    let (received, answered, sent, dropped, failed) = (
        counter_family(),
        counter_family(),
        counter_family(),
        counter_family(),
        counter_family(),
    );
    for (account, name, value) in counters {
        let (family, extra) = if let Some(reason) = name.strip_prefix("dropped_") {
            (&dropped, Some(("reason", reason)))
        } else if let Some(class) = name.strip_prefix("send_failed_") {
            (&failed, Some(("class", class)))
        } else {
            match name.as_str() {
                "received" => (&received, None),
                "answered" => (&answered, None),
                "sent" => (&sent, None),
                _ => continue,
            }
        };
        let mut l = vec![("account", account.as_str())];
        l.extend(extra);
        family.get_or_create(&labels(&l)).inc_by(*value);
    }
    reg.register("messages_received", "Messages received", received);
    reg.register("messages_answered", "Messages the agent answered", answered);
    reg.register("messages_sent", "Messages sent", sent);
    reg.register("messages_dropped", "Messages dropped, by reason", dropped);
    reg.register("send_failures", "Failed sends, by class", failed);
}

fn register_mail(reg: &mut Registry, components: &[ComponentHealth]) {
    let mail: Vec<_> = components
        .iter()
        .filter_map(|h| h.mail.as_ref().map(|m| (h, m)))
        .collect();
    if mail.is_empty() {
        return;
    }
    for (name, help) in [
        ("tokens_today", "Model tokens spent on triage today"),
        ("seen_today", "Mail decided today"),
        ("reported_today", "Mail reported to the owner today"),
        ("queued", "Report items waiting for the mail chat"),
    ] {
        let family = gauge_family();
        for (h, m) in &mail {
            let v = match name {
                "tokens_today" => m.tokens_today,
                "seen_today" => m.seen_today,
                "reported_today" => m.reported_today,
                _ => m.queued,
            };
            family
                .get_or_create(&labels(&[("account", &h.id)]))
                .set(v as i64);
        }
        reg.register(format!("mail_{name}"), help, family);
    }
}

/// Serves `GET /metrics` (and `/`) on `addr` until `shutdown`; `page` renders the current page.
pub async fn serve<F>(addr: SocketAddr, page: F, shutdown: CancellationToken) -> std::io::Result<()>
where
    F: Fn() -> futures_util::future::BoxFuture<'static, String> + Send + Sync + 'static,
{
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving Prometheus metrics");
    let page = Arc::new(page);
    let handler = move || {
        let page = page.clone();
        async move {
            (
                [(axum::http::header::CONTENT_TYPE, CONTENT_TYPE)],
                page().await,
            )
        }
    };
    let app = axum::Router::new()
        .route("/metrics", axum::routing::get(handler.clone()))
        .route("/", axum::routing::get(handler));
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> String {
        let mut h = ComponentHealth::new("wechat", "phone", true);
        h.state = ComponentState::Connected;
        h.restarts = 2;
        render(&Snapshot {
            components: vec![h],
            counters: vec![
                ("wechat:phone".into(), "received".into(), 5),
                ("wechat:phone".into(), "dropped_not_owner".into(), 2),
                ("wechat:phone".into(), "send_failed_slow_down".into(), 1),
            ],
            confirm: vec![("expired".into(), 2), ("yes".into(), 5)],
            agent: Some(AgentHealth {
                backend: "openai".into(),
                model: None,
                state: AgentState::Ok,
                last_success_unix_seconds: None,
                error: None,
                action: None,
                processes: None,
            }),
            outbox_depth: vec![("wechat:phone".into(), 3)],
            deliveries: Some(crate::protocol::DeliveryCounts {
                waiting: 2,
                unconfirmed: 4,
                oldest_waiting: Some(crate::protocol::WaitingItem {
                    route: "wechat:phone".into(),
                    why: crate::protocol::WaitWhy::SendWindow,
                    since_unix_seconds: 1_000,
                }),
                ..Default::default()
            }),
            now_unix_seconds: 1_090,
        })
    }

    #[test]
    fn page_has_states_restarts_and_counters() {
        let page = page();
        for want in [
            "scv_bridge_account_state{account=\"wechat:phone\",state=\"connected\"} 1",
            "scv_bridge_account_state{account=\"wechat:phone\",state=\"failed\"} 0",
            "scv_bridge_account_restarts_total{account=\"wechat:phone\"} 2",
            "scv_bridge_messages_received_total{account=\"wechat:phone\"} 5",
            "scv_bridge_messages_dropped_total{account=\"wechat:phone\",reason=\"not_owner\"} 2",
            "scv_bridge_send_failures_total{account=\"wechat:phone\",class=\"slow_down\"} 1",
            "scv_bridge_confirm_questions{state=\"yes\"} 5",
            "scv_bridge_confirm_questions{state=\"expired\"} 2",
            "scv_bridge_owner_messages{state=\"waiting\"} 2",
            "scv_bridge_owner_messages{state=\"unconfirmed\"} 4",
            "scv_bridge_owner_messages{state=\"sent\"} 0",
            "scv_bridge_owner_oldest_waiting_seconds 90",
        ] {
            assert!(page.contains(want), "{want} in\n{page}");
        }
    }

    #[test]
    fn every_family_says_what_it_is() {
        // Histograms show once they hold a sample (prometheus-client leaves out empty families).
        crate::telemetry::turn("wechat:phone", std::time::Duration::from_millis(20));
        crate::telemetry::send("wechat:phone", std::time::Duration::from_millis(2));
        crate::telemetry::journal_commit("wechat:phone", std::time::Duration::from_micros(200));
        let page = page();
        assert!(
            !page.contains(".."),
            "one full stop after each HELP text:\n{page}"
        );
        for family in [
            "scv_bridge_build_info",
            "scv_bridge_agent_up",
            "scv_bridge_account_state",
            "scv_bridge_outbox_depth",
            "scv_bridge_turn_seconds",
            "scv_bridge_send_seconds",
            "scv_bridge_journal_commit_seconds",
        ] {
            let base = family.trim_end_matches("_info");
            assert!(
                page.contains(&format!("# HELP {base} "))
                    && page.contains(&format!("# TYPE {base} ")),
                "{family} has HELP and TYPE lines in\n{page}"
            );
        }
        assert!(
            page.contains("scv_bridge_agent_up{backend=\"openai\"} 1"),
            "{page}"
        );
        assert!(
            page.contains("scv_bridge_outbox_depth{account=\"wechat:phone\"} 3"),
            "{page}"
        );
        assert!(
            page.contains(&format!("commit=\"{}\"", env!("SCV_BRIDGE_COMMIT"))),
            "{page}"
        );
        assert!(page.ends_with("# EOF\n"), "{page}");
    }

    #[test]
    fn latencies_show_as_histograms() {
        crate::telemetry::journal_commit("wechat:histo", std::time::Duration::from_micros(300));
        let page = page();
        assert!(
            page.contains("# TYPE scv_bridge_journal_commit_seconds histogram"),
            "{page}"
        );
        assert!(
            page.contains("scv_bridge_journal_commit_seconds_count{account=\"wechat:histo\"} 1"),
            "{page}"
        );
        assert!(
            page.contains(
                "scv_bridge_journal_commit_seconds_bucket{le=\"0.0004\",account=\"wechat:histo\"} 1"
            ) || page.contains(
                "scv_bridge_journal_commit_seconds_bucket{account=\"wechat:histo\",le=\"0.0004\"} 1"
            ),
            "{page}"
        );
    }

    #[tokio::test]
    async fn serves_over_http() {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("probe");
        let addr = probe.local_addr().expect("addr");
        drop(probe);
        let stop = CancellationToken::new();
        let page = || -> futures_util::future::BoxFuture<'static, String> {
            Box::pin(async { "up 1\n".to_string() })
        };
        let server = tokio::spawn(serve(addr, page, stop.clone()));
        let url = format!("http://{addr}/metrics");
        let resp = loop {
            match reqwest::get(&url).await {
                Ok(r) => break r,
                Err(_) => tokio::task::yield_now().await,
            }
        };
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some(CONTENT_TYPE)
        );
        assert_eq!(resp.text().await.expect("body"), "up 1\n");
        stop.cancel();
        server.await.expect("join").expect("serve");
    }
}
