//! Prometheus metrics over plain HTTP (`metrics_listen`): counts and states only, never text.

use std::fmt::Write;
use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::protocol::{ComponentHealth, ComponentState};

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

/// The metrics page: account states and restarts, pipeline counters `(account, name, value)`, mail counts.
pub fn render(components: &[ComponentHealth], counters: &[(String, String, u64)]) -> String {
    let mut out = String::new();
    out.push_str("# HELP scv_bridge_account_state 1 for the state each account is in.\n# TYPE scv_bridge_account_state gauge\n");
    for h in components {
        for s in STATES {
            let v = u8::from(h.state == s);
            let _ = writeln!(
                out,
                "scv_bridge_account_state{{account=\"{}\",state=\"{}\"}} {v}",
                h.id,
                s.as_str()
            );
        }
    }
    out.push_str("# HELP scv_bridge_account_restarts_total Restarts since the daemon started.\n# TYPE scv_bridge_account_restarts_total counter\n");
    for h in components {
        let _ = writeln!(
            out,
            "scv_bridge_account_restarts_total{{account=\"{}\"}} {}",
            h.id, h.restarts
        );
    }
    let mut families: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (account, name, value) in counters {
        let (family, label) = if let Some(reason) = name.strip_prefix("dropped_") {
            (
                "scv_bridge_messages_dropped_total",
                format!(",reason=\"{reason}\""),
            )
        } else if let Some(class) = name.strip_prefix("send_failed_") {
            (
                "scv_bridge_send_failures_total",
                format!(",class=\"{class}\""),
            )
        } else {
            match name.as_str() {
                "received" => ("scv_bridge_messages_received_total", String::new()),
                "answered" => ("scv_bridge_messages_answered_total", String::new()),
                "sent" => ("scv_bridge_messages_sent_total", String::new()),
                _ => continue,
            }
        };
        families
            .entry(family.to_string())
            .or_default()
            .push(format!("{family}{{account=\"{account}\"{label}}} {value}"));
    }
    for (family, lines) in families {
        let _ = writeln!(out, "# TYPE {family} counter");
        for l in lines {
            out.push_str(&l);
            out.push('\n');
        }
    }
    let mail: Vec<_> = components
        .iter()
        .filter_map(|h| h.mail.as_ref().map(|m| (h, m)))
        .collect();
    if !mail.is_empty() {
        for (name, help) in [
            ("tokens_today", "Model tokens spent on triage today."),
            ("seen_today", "Mail decided today."),
            ("reported_today", "Mail reported to the owner today."),
            ("queued", "Report items waiting for the mail chat."),
        ] {
            let _ = writeln!(
                out,
                "# HELP scv_bridge_mail_{name} {help}\n# TYPE scv_bridge_mail_{name} gauge"
            );
            for (h, m) in &mail {
                let v = match name {
                    "tokens_today" => m.tokens_today,
                    "seen_today" => m.seen_today,
                    "reported_today" => m.reported_today,
                    _ => m.queued,
                };
                let _ = writeln!(out, "scv_bridge_mail_{name}{{account=\"{}\"}} {v}", h.id);
            }
        }
    }
    out
}

/// Confirm questions by outcome, as a metric family.
pub fn render_confirm(counts: &[(String, u64)]) -> String {
    let mut out = String::from(
        "# HELP scv_bridge_confirm_questions Confirm questions by state.\n# TYPE scv_bridge_confirm_questions gauge\n",
    );
    for (state, n) in counts {
        let _ = writeln!(out, "scv_bridge_confirm_questions{{state=\"{state}\"}} {n}");
    }
    out
}

/// Serves `GET /metrics` on `addr` until `shutdown`; `page` renders the current page.
pub async fn serve<F>(addr: SocketAddr, page: F, shutdown: CancellationToken) -> std::io::Result<()>
where
    F: Fn() -> futures_util::future::BoxFuture<'static, String> + Send + Sync + 'static,
{
    let listener = TcpListener::bind(addr).await?;
    tracing::info!(%addr, "serving Prometheus metrics");
    let page = std::sync::Arc::new(page);
    loop {
        let (mut stream, _) = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(_) => continue,
            },
        };
        let page = page.clone();
        tokio::spawn(async move {
            // Requests are tiny; read what arrives first and answer it.
            let mut buf = [0u8; 1024];
            let n = match tokio::time::timeout(
                std::time::Duration::from_secs(5),
                stream.read(&mut buf),
            )
            .await
            {
                Ok(Ok(n)) => n,
                _ => return,
            };
            let head = String::from_utf8_lossy(&buf[..n]);
            let (status, body) = if head.starts_with("GET /metrics ") || head.starts_with("GET / ")
            {
                ("200 OK", page().await)
            } else {
                ("404 Not Found", "not found\n".to_string())
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(resp.as_bytes()).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_has_states_restarts_and_counters() {
        let mut h = ComponentHealth::new("wechat", "phone", true);
        h.state = ComponentState::Connected;
        h.restarts = 2;
        let page = render(
            &[h],
            &[
                ("wechat:phone".into(), "received".into(), 5),
                ("wechat:phone".into(), "dropped_not_owner".into(), 2),
                ("wechat:phone".into(), "send_failed_slow_down".into(), 1),
            ],
        );
        assert!(
            page.contains(
                "scv_bridge_account_state{account=\"wechat:phone\",state=\"connected\"} 1"
            )
        );
        assert!(
            page.contains("scv_bridge_account_state{account=\"wechat:phone\",state=\"failed\"} 0")
        );
        assert!(page.contains("scv_bridge_account_restarts_total{account=\"wechat:phone\"} 2"));
        assert!(page.contains("scv_bridge_messages_received_total{account=\"wechat:phone\"} 5"));
        assert!(page.contains(
            "scv_bridge_messages_dropped_total{account=\"wechat:phone\",reason=\"not_owner\"} 2"
        ));
        assert!(page.contains(
            "scv_bridge_send_failures_total{account=\"wechat:phone\",class=\"slow_down\"} 1"
        ));
    }

    #[test]
    fn confirm_outcomes_are_a_family() {
        let page = render_confirm(&[("expired".into(), 2), ("yes".into(), 5)]);
        assert!(page.contains("scv_bridge_confirm_questions{state=\"yes\"} 5"));
        assert!(page.contains("scv_bridge_confirm_questions{state=\"expired\"} 2"));
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
        let mut stream = loop {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(s) => break s,
                Err(_) => tokio::task::yield_now().await,
            }
        };
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        let mut resp = String::new();
        stream.read_to_string(&mut resp).await.expect("read");
        assert!(
            resp.starts_with("HTTP/1.1 200 OK") && resp.ends_with("up 1\n"),
            "{resp}"
        );
        stop.cancel();
        server.await.expect("join").expect("serve");
    }
}
