//! The one table that turns a call's outcome into what the caller should do about it.

use std::time::Duration;

use crate::endpoint::Endpoint;

/// `ret`/`errcode` meaning "session expired or credentials invalid" (spec §3.2).
pub const SESSION_EXPIRED: i64 = -14;
/// `ret` meaning "refused for now" on `sendmessage`: send window used up, throttled, or
/// rejected content (spec §5).
pub const SEND_REFUSED: i64 = -2;
/// How long to hold sends after a `ret=-2`. hermes-agent retries after 3 s behind a 30 s
/// circuit breaker, and the throttle can last up to an hour; 30 s is the floor the caller
/// backs off from, never a promise that the next send works.
pub const SEND_SLOW_DOWN: Duration = Duration::from_secs(30);
/// How long to wait after an HTTP 429 from a gateway (the platform documents none).
pub const GATEWAY_SLOW_DOWN: Duration = Duration::from_secs(30);

/// What the caller should do after a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Retry with backoff: network, gateway 5xx, timeout, unknown codes.
    Transient,
    /// Stop until a human acts. `relogin` says whether a new QR login fixes it (expired or
    /// rejected token); otherwise the configuration is wrong (bad base URL, client bug).
    Fatal {
        /// A new QR login is the fix.
        relogin: bool,
    },
    /// The platform asks us to back off for at least this long; honour it without counting
    /// a failure.
    SlowDown(Duration),
}

/// What happened on one call, stripped to what classification needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A non-2xx HTTP status (transport or gateway).
    Http(u16),
    /// HTTP 200 with a non-zero `ret` and/or `errcode` in the body.
    Api {
        /// `ret`, if present.
        ret: Option<i64>,
        /// `errcode`, if present.
        errcode: Option<i64>,
    },
    /// Connection refused, reset, DNS, TLS.
    Network,
    /// Our client timeout fired.
    Timeout,
    /// The body was not the JSON we expect (e.g. a middlebox's HTML page).
    Malformed,
    /// No token is configured, or the login answer lacked a credential.
    MissingCredentials,
    /// The base URL cannot be used.
    BadConfig,
}

/// Maps an outcome on an endpoint to the action to take. Every row is tested.
pub fn classify(endpoint: Endpoint, outcome: Outcome) -> ErrorClass {
    match outcome {
        Outcome::Api { ret, errcode } => classify_api(endpoint, ret, errcode),
        // 429 is not documented for iLink; honour it as a gateway's slow-down.
        Outcome::Http(429) => ErrorClass::SlowDown(GATEWAY_SLOW_DOWN),
        // Request timeout: the gateway gave up, like a 5xx.
        Outcome::Http(408) => ErrorClass::Transient,
        // Other 4xx mean a wrong base URL or a request this client builds wrongly: retrying
        // cannot help, so surface it (non-2xx never carry business errors, spec §1).
        Outcome::Http(status) if (400..500).contains(&status) => {
            ErrorClass::Fatal { relogin: false }
        }
        // 5xx, 524 and anything stranger come from the transport.
        Outcome::Http(_) => ErrorClass::Transient,
        Outcome::Network | Outcome::Timeout | Outcome::Malformed => ErrorClass::Transient,
        Outcome::MissingCredentials => ErrorClass::Fatal { relogin: true },
        Outcome::BadConfig => ErrorClass::Fatal { relogin: false },
    }
}

fn classify_api(endpoint: Endpoint, ret: Option<i64>, errcode: Option<i64>) -> ErrorClass {
    let codes = [ret, errcode];
    // -14 wins over anything else in the body: an expired, rebound, wrong or empty token
    // all look like this, and only a new login fixes them.
    if codes.contains(&Some(SESSION_EXPIRED)) {
        return ErrorClass::Fatal { relogin: true };
    }
    if codes.contains(&Some(SEND_REFUSED)) && endpoint == Endpoint::SendMessage {
        return ErrorClass::SlowDown(SEND_SLOW_DOWN);
    }
    // Everything else, including -2 on getupdates, backs off and retries. hermes-agent
    // treats -2 on getupdates as a stale session (unconfirmed); we choose backoff, which
    // cannot hammer the server and does not demand a re-login for what may be a blip.
    ErrorClass::Transient
}

#[cfg(test)]
mod tests {
    use super::*;
    use Endpoint::*;
    use ErrorClass::*;

    fn api(ret: Option<i64>, errcode: Option<i64>) -> Outcome {
        Outcome::Api { ret, errcode }
    }

    #[test]
    fn table() {
        let relogin = Fatal { relogin: true };
        let config = Fatal { relogin: false };
        let rows: &[(Endpoint, Outcome, ErrorClass)] = &[
            // -14 in errcode only, in ret only, and in both, on every endpoint kind.
            (GetUpdates, api(None, Some(-14)), relogin),
            (GetUpdates, api(Some(-14), None), relogin),
            (GetUpdates, api(Some(-14), Some(-14)), relogin),
            (SendMessage, api(None, Some(-14)), relogin),
            (SendMessage, api(Some(-2), Some(-14)), relogin),
            (GetConfig, api(None, Some(-14)), relogin),
            (SendTyping, api(Some(-14), None), relogin),
            (NotifyStart, api(None, Some(-14)), relogin),
            (NotifyStop, api(None, Some(-14)), relogin),
            (GetQrcodeStatus, api(None, Some(-14)), relogin),
            // -2 on sendmessage: window used up or throttled.
            (SendMessage, api(Some(-2), None), SlowDown(SEND_SLOW_DOWN)),
            (SendMessage, api(None, Some(-2)), SlowDown(SEND_SLOW_DOWN)),
            // -2 elsewhere and other codes: back off.
            (GetUpdates, api(Some(-2), None), Transient),
            (GetConfig, api(Some(-2), None), Transient),
            (GetUpdates, api(Some(-1), None), Transient),
            (SendMessage, api(Some(-1), None), Transient),
            (SendMessage, api(Some(0), Some(-3)), Transient),
            (GetBotQrcode, api(Some(1), None), Transient),
            // Transport.
            (GetUpdates, Outcome::Http(500), Transient),
            (GetUpdates, Outcome::Http(502), Transient),
            (GetUpdates, Outcome::Http(503), Transient),
            (GetUpdates, Outcome::Http(524), Transient),
            (SendMessage, Outcome::Http(408), Transient),
            (SendMessage, Outcome::Http(429), SlowDown(GATEWAY_SLOW_DOWN)),
            (SendMessage, Outcome::Http(400), config),
            (GetUpdates, Outcome::Http(401), config),
            (GetUpdates, Outcome::Http(403), config),
            (GetUpdates, Outcome::Http(404), config),
            (GetUpdates, Outcome::Http(405), config),
            (GetUpdates, Outcome::Http(302), Transient),
            (GetUpdates, Outcome::Network, Transient),
            (SendMessage, Outcome::Network, Transient),
            (SendMessage, Outcome::Timeout, Transient),
            (GetUpdates, Outcome::Timeout, Transient),
            (GetUpdates, Outcome::Malformed, Transient),
            (GetUpdates, Outcome::MissingCredentials, relogin),
            (GetQrcodeStatus, Outcome::MissingCredentials, relogin),
            (SendMessage, Outcome::BadConfig, config),
        ];
        for (i, (endpoint, outcome, want)) in rows.iter().enumerate() {
            assert_eq!(
                classify(*endpoint, *outcome),
                *want,
                "row {i}: {endpoint} {outcome:?}"
            );
        }
    }
}
