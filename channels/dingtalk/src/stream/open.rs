//! `POST /v1.0/gateway/connections/open` (spec §1.3): credentials in, a one-time ticket and the
//! WebSocket endpoint out. Called for every (re)connect; the ticket is never stored.

use serde_json::{Value, json};

use crate::call::Call;
use crate::client::Client;
use crate::error::Error;
use crate::http::{self, field};
use crate::secret::Secret;

/// Path on the API base.
pub const OPEN_PATH: &str = "/v1.0/gateway/connections/open";
/// The `ua` this crate reports (spec §1.3: `name-sdk-lang/version`).
pub const USER_AGENT: &str = concat!("scv-bridge-sdk-rust/", env!("CARGO_PKG_VERSION"));

/// One subscription (`{type, topic}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// `EVENT` or `CALLBACK`.
    pub kind: &'static str,
    /// The topic, e.g. [`crate::stream::ROBOT_TOPIC`].
    pub topic: String,
}

/// Where to dial, with the one-time ticket. Never logged (the ticket is a secret).
#[derive(Debug)]
pub struct Ticket {
    /// The endpoint returned (never hard-coded, spec §0).
    pub endpoint: String,
    /// The ticket: one connection within 90 s.
    pub ticket: Secret,
}

impl Ticket {
    /// `{endpoint}?ticket=<url-encoded ticket>` (spec §1.4), as a secret: it carries the ticket.
    pub fn url(&self) -> Result<Secret, Error> {
        let mut url = url::Url::parse(&self.endpoint).map_err(|_| Error::Malformed {
            call: Call::OpenConnection,
            detail: "the endpoint is not a URL".into(),
        })?;
        if !matches!(url.scheme(), "ws" | "wss") {
            return Err(Error::Malformed {
                call: Call::OpenConnection,
                detail: "the endpoint is not a ws(s) URL".into(),
            });
        }
        url.query_pairs_mut()
            .append_pair("ticket", self.ticket.expose());
        Ok(Secret::new(url.to_string()))
    }
}

/// Asks for a ticket. `Accept: application/json` is required (without it the answer is XML).
pub async fn open(client: &Client, subscriptions: &[Subscription]) -> Result<Ticket, Error> {
    let o = client.options();
    let subs: Vec<Value> = subscriptions
        .iter()
        .map(|s| json!({"type": s.kind, "topic": s.topic}))
        .collect();
    let body = json!({
        "clientId": o.credentials.client_id,
        "clientSecret": o.credentials.client_secret.expose(),
        "subscriptions": subs,
        "ua": USER_AGENT,
    });
    let req = client
        .inner
        .http
        .post(format!("{}{OPEN_PATH}", o.api_base))
        .header("Accept", "application/json")
        .json(&body);
    let call = Call::OpenConnection;
    let v = http::new_api(call, http::send(call, req, o.timeout).await?)?;
    // An empty endpoint or ticket is a failure (Go/Node SDKs).
    let endpoint = field(call, &v, "endpoint")?.to_string();
    let ticket = Secret::new(field(call, &v, "ticket")?);
    Ok(Ticket { endpoint, ticket })
}
