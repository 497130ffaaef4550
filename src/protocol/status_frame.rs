//! A `daemon.status` line assembled from components that are already JSON.

use std::sync::Arc;

use super::messages::ServerEvent;
use super::status::DaemonStatus;

/// The `daemon.status` line for `status` with `components` (each a serialized `ComponentHealth`) spliced in.
///
/// Equal, as JSON, to serializing the event with those components; it only skips re-serializing them.
pub fn status_line(request_id: &str, status: &DaemonStatus, components: &[Arc<String>]) -> String {
    let mut head = status.clone();
    head.components.clear();
    let event = ServerEvent::DaemonStatus {
        request_id: request_id.to_string(),
        status: Box::new(head),
    };
    let empty = serde_json::to_string(&event).unwrap_or_default();
    // Field names are fixed and string values are escaped, so this marker occurs exactly once.
    let marker = "\"components\":[]";
    let Some(at) = empty.find(marker) else {
        return empty;
    };
    let body: usize = components.iter().map(|c| c.len() + 1).sum();
    let mut out = String::with_capacity(empty.len() + body);
    out.push_str(&empty[..at]);
    out.push_str("\"components\":[");
    for (i, c) in components.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(c);
    }
    out.push(']');
    out.push_str(&empty[at + marker.len()..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ComponentHealth;

    #[test]
    fn spliced_line_equals_plain_serialization() {
        let comps = vec![
            ComponentHealth::new("wechat", "a", true),
            ComponentHealth::new("feishu", "b\"c", false),
        ];
        let status = DaemonStatus {
            components: comps.clone(),
            ..DaemonStatus::new("0.1.0", 9)
        };
        let json: Vec<Arc<String>> = comps
            .iter()
            .map(|c| Arc::new(serde_json::to_string(c).expect("ser")))
            .collect();
        let spliced: serde_json::Value =
            serde_json::from_str(&status_line("r1", &status, &json)).expect("valid JSON");
        let plain = serde_json::to_value(ServerEvent::DaemonStatus {
            request_id: "r1".into(),
            status: Box::new(status),
        })
        .expect("ser");
        assert_eq!(spliced, plain);
        let none: serde_json::Value =
            serde_json::from_str(&status_line("r2", &DaemonStatus::new("v", 1), &[]))
                .expect("valid");
        assert_eq!(none["status"]["components"], serde_json::json!([]));
    }
}
