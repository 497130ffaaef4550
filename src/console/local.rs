//! Model servers on this machine, found on their default ports and offered on the model form:
//! Ollama (`127.0.0.1:11434`) and llama.cpp's server (`127.0.0.1:8080`), each asked for its
//! models (`GET /v1/models`, the OpenAI-compatible list both serve; Ollama's own `/api/tags`
//! when that fails). Every probe has a short timeout and they run together, so a page never
//! waits long for a port where something else listens and does not answer.
//!
//! Only loopback addresses are probed (the console's SSRF rule: no address a person types is
//! fetched here); tests inject their fake's address through [`LocalServer`].

use std::time::Duration;

use serde::Deserialize;

/// The longest one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
/// The most model names listed per server (a page, not a catalogue).
const MAX_MODELS: usize = 50;

/// Where a local model server may answer; made by the composition root (the defaults) or a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServer {
    /// What people call it ("Ollama").
    pub name: &'static str,
    /// Its address without a path (`http://127.0.0.1:11434`); must stay loopback.
    pub origin: String,
}

impl LocalServer {
    /// Ollama and llama.cpp's server on their default ports.
    pub fn defaults() -> Vec<LocalServer> {
        vec![
            LocalServer {
                name: "Ollama",
                origin: "http://127.0.0.1:11434".into(),
            },
            LocalServer {
                name: "llama.cpp",
                origin: "http://127.0.0.1:8080".into(),
            },
        ]
    }
}

/// A server that answered, with its models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub name: &'static str,
    /// The OpenAI-compatible address to save as `base_url` (`…/v1`).
    pub base_url: String,
    pub models: Vec<String>,
}

/// The servers of `candidates` that answer now, in their order.
pub(super) async fn find(candidates: &[LocalServer]) -> Vec<Found> {
    let Ok(client) = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .connect_timeout(PROBE_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
    else {
        return Vec::new();
    };
    let probes = candidates
        .iter()
        .filter(|c| loopback(&c.origin))
        .map(|c| probe(&client, c));
    futures_util::future::join_all(probes)
        .await
        .into_iter()
        .flatten()
        .collect()
}

async fn probe(client: &reqwest::Client, server: &LocalServer) -> Option<Found> {
    let origin = server.origin.trim_end_matches('/');
    let models = match openai_models(client, origin).await {
        Some(m) => m,
        None => ollama_tags(client, origin).await?,
    };
    Some(Found {
        name: server.name,
        base_url: format!("{origin}/v1"),
        models: models.into_iter().take(MAX_MODELS).collect(),
    })
}

/// `GET /v1/models`: `{"data": [{"id": "..."}]}`.
async fn openai_models(client: &reqwest::Client, origin: &str) -> Option<Vec<String>> {
    #[derive(Deserialize)]
    struct List {
        data: Vec<Model>,
    }
    #[derive(Deserialize)]
    struct Model {
        id: String,
    }
    let list: List = get_json(client, &format!("{origin}/v1/models")).await?;
    Some(list.data.into_iter().map(|m| m.id).collect())
}

/// Ollama's `GET /api/tags`: `{"models": [{"name": "..."}]}`.
async fn ollama_tags(client: &reqwest::Client, origin: &str) -> Option<Vec<String>> {
    #[derive(Deserialize)]
    struct Tags {
        models: Vec<Tag>,
    }
    #[derive(Deserialize)]
    struct Tag {
        name: String,
    }
    let tags: Tags = get_json(client, &format!("{origin}/api/tags")).await?;
    Some(tags.models.into_iter().map(|t| t.name).collect())
}

async fn get_json<T: serde::de::DeserializeOwned>(
    client: &reqwest::Client,
    url: &str,
) -> Option<T> {
    // The whole exchange, body included, within the timeout (a server may trickle its answer).
    let fetch = async {
        let answer = client.get(url).send().await.ok()?;
        if !answer.status().is_success() {
            return None;
        }
        answer.json::<T>().await.ok()
    };
    tokio::time::timeout(PROBE_TIMEOUT, fetch)
        .await
        .ok()
        .flatten()
}

/// Whether `origin` is `http://` on a loopback address (never a name that could resolve away).
fn loopback(origin: &str) -> bool {
    let Some(rest) = origin.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split('/').next().unwrap_or_default();
    host.parse::<std::net::SocketAddr>()
        .is_ok_and(|a| a.ip().is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_probed() {
        assert!(loopback("http://127.0.0.1:11434"));
        assert!(loopback("http://[::1]:8080"));
        assert!(
            !loopback("http://localhost:8080"),
            "a name may resolve away"
        );
        assert!(!loopback("http://10.0.0.2:8080"));
        assert!(!loopback("https://127.0.0.1:8080"));
    }
}
