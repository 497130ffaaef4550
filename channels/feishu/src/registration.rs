//! "Scan to create an app": the accounts host's device-code registration
//! (`POST {accounts}/oauth/v1/app/registration`, `action=init|begin|poll`). A person scans the
//! link [`Registration::begin`] returns; [`Registration::wait`] polls until the platform hands
//! out the new app's ID and secret (and the scanner's open_id).
//!
//! Made by the Feishu login flow; the fake in `fake::registration` speaks the same wire. The
//! `device_code` is a secret (a poll with it returns the app secret): it lives in a [`Secret`]
//! and never reaches a log or a `Debug` dump, nor does the secret handed out.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::time::Instant;

use crate::error::Error;
use crate::secret::{Credentials, Secret};

/// The registration endpoint, relative to an accounts host.
pub const REGISTRATION_PATH: &str = "/oauth/v1/app/registration";
/// Feishu's accounts host.
pub const FEISHU_ACCOUNTS: &str = "https://accounts.feishu.cn";
/// Lark's accounts host.
pub const LARK_ACCOUNTS: &str = "https://accounts.larksuite.com";
/// What `slow_down` adds to the interval, for good (every SDK).
pub const SLOW_DOWN_STEP: Duration = Duration::from_secs(5);
/// The longest interval between polls (lark-cli's cap).
pub const MAX_INTERVAL: Duration = Duration::from_secs(60);
/// Transport failures in a row after which waiting stops (a proxy page, a dead host).
const MAX_TRANSPORT_FAILURES: u32 = 3;

/// Where the registration talks to, and what it says about the app to create.
#[derive(Debug, Clone)]
pub struct RegistrationOptions {
    /// The accounts host `begin` and the first polls go to (always Feishu's, even for Lark).
    pub feishu_accounts: String,
    /// The accounts host polled once a Lark tenant scanned.
    pub lark_accounts: String,
    /// The open platform base, for a QR link built when the server sends none.
    pub open_base: String,
    /// The new app's suggested name (the person may edit it on the page).
    pub app_name: String,
    /// Timeout of one request (SDKs use 10-15 s).
    pub request_timeout: Duration,
}

impl RegistrationOptions {
    /// The platform's own hosts.
    pub fn official(app_name: impl Into<String>) -> Self {
        Self {
            feishu_accounts: FEISHU_ACCOUNTS.into(),
            lark_accounts: LARK_ACCOUNTS.into(),
            open_base: crate::Domain::Feishu.base_url().into(),
            app_name: app_name.into(),
            request_timeout: Duration::from_secs(15),
        }
    }
}

/// Why a registration ended without an app. The login flow turns it into words for people.
#[derive(Debug, thiserror::Error)]
pub enum RegistrationError {
    /// `init` does not offer the `client_secret` method (the only one a bot app can use).
    #[error("the accounts host does not offer app registration with a client secret")]
    Unsupported,
    /// The person cancelled on the page (`access_denied`).
    #[error("the app creation was cancelled on the page")]
    Denied,
    /// The link expired (`expired_token`, `invalid_grant`, or the local deadline passed).
    #[error("the link expired before an app was created")]
    Expired,
    /// Any other `error` the server sent, with its description.
    #[error("the accounts host refused: {error}: {description}")]
    Refused {
        /// The `error` code.
        error: String,
        /// `error_description`, if sent.
        description: String,
    },
    /// A request failed below the protocol (network, non-JSON body, unexpected shape).
    #[error(transparent)]
    Transport(#[from] Error),
}

/// A started registration: the link to scan and how to poll. `Debug` hides the device code.
#[derive(Debug, Clone)]
pub struct Begun {
    device_code: Secret,
    /// The short code shown on the page (`XXXX-XXXX`).
    pub user_code: String,
    /// The link to encode as the QR and to show for clicking.
    pub qr_url: String,
    /// How long the link lives.
    pub expires_in: Duration,
    /// The platform's pace between polls.
    pub interval: Duration,
}

/// The brand of the tenant that scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Brand {
    /// Feishu (China): `open.feishu.cn`.
    Feishu,
    /// Lark (international): `open.larksuite.com`.
    Lark,
}

/// A created app. `Debug` hides the secret.
#[derive(Debug, Clone)]
pub struct Created {
    /// The new app's ID and secret.
    pub credentials: Credentials,
    /// The scanner's open_id as the accounts host reported it (whether the new app sees the
    /// same id is unconfirmed: the caller treats it only as a candidate owner).
    pub open_id: Option<String>,
    /// Feishu or Lark: which open platform the app lives on.
    pub brand: Brand,
}

/// One poll's meaning.
#[derive(Debug)]
enum Polled {
    Created(Created),
    /// Keep polling (pending, or neither an error nor credentials).
    Pending,
    SlowDown,
    /// A Lark tenant: poll the Lark host now.
    SwitchToLark,
}

/// The registration client.
#[derive(Debug, Clone)]
pub struct Registration {
    http: reqwest::Client,
    options: RegistrationOptions,
}

/// The fields any registration answer may carry; never `Debug` (it holds secrets).
#[derive(Deserialize, Default)]
struct Answer {
    error: Option<String>,
    error_description: Option<String>,
    supported_auth_methods: Option<Vec<String>>,
    device_code: Option<String>,
    user_code: Option<String>,
    verification_uri_complete: Option<String>,
    expires_in: Option<u64>,
    expire_in: Option<u64>,
    interval: Option<u64>,
    client_id: Option<String>,
    client_secret: Option<String>,
    user_info: Option<UserInfo>,
}

#[derive(Deserialize, Default)]
struct UserInfo {
    open_id: Option<String>,
    tenant_brand: Option<String>,
}

impl Registration {
    /// A client for `options`' hosts.
    pub fn new(options: RegistrationOptions) -> Result<Self, Error> {
        let http = reqwest::Client::builder()
            .timeout(options.request_timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| Error::Network(e.to_string()))?;
        Ok(Self { http, options })
    }

    /// `action=init`: fails with [`RegistrationError::Unsupported`] unless the host offers
    /// `client_secret` (what the Python SDK and lark-cli's peers check).
    pub async fn init(&self) -> Result<(), RegistrationError> {
        let a = self
            .post(&self.options.feishu_accounts, &[("action", "init")])
            .await?;
        let offered = a.supported_auth_methods.unwrap_or_default();
        match offered.iter().any(|m| m == "client_secret") {
            true => Ok(()),
            false => Err(RegistrationError::Unsupported),
        }
    }

    /// `action=begin` on the Feishu host (also for Lark tenants): the link to scan.
    pub async fn begin(&self) -> Result<Begun, RegistrationError> {
        let a = self
            .post(
                &self.options.feishu_accounts,
                &[
                    ("action", "begin"),
                    ("archetype", "PersonalAgent"),
                    ("auth_method", "client_secret"),
                    ("request_user_info", "open_id tenant_brand"),
                ],
            )
            .await?;
        refused(&a)?;
        let (Some(device_code), Some(user_code)) = (a.device_code, a.user_code) else {
            return Err(
                Error::Decode("registration begin without device_code/user_code".into()).into(),
            );
        };
        let page = a.verification_uri_complete.unwrap_or_else(|| {
            format!("{}/page/cli?user_code={user_code}", self.options.open_base)
        });
        Ok(Begun {
            device_code: Secret::new(device_code),
            qr_url: qr_link(&page, &self.options.app_name)?,
            user_code,
            // The docs say 10 minutes; `expire_in` is the spelling older SDKs read.
            expires_in: Duration::from_secs(a.expires_in.or(a.expire_in).unwrap_or(600)),
            interval: Duration::from_secs(a.interval.unwrap_or(5).max(1)),
        })
    }

    /// Polls `begun` until the app is created, the person cancels, or the link expires. Waits
    /// one interval before each poll; `slow_down` adds 5 s for good (capped at 60 s); a Lark
    /// tenant switches polling to the Lark host once, at once.
    pub async fn wait(&self, begun: &Begun) -> Result<Created, RegistrationError> {
        let deadline = Instant::now() + begun.expires_in;
        let mut interval = begun.interval;
        let mut host = self.options.feishu_accounts.as_str();
        let (mut switched, mut pause, mut failures) = (false, true, 0);
        loop {
            if pause {
                tokio::time::sleep(interval).await;
            }
            if Instant::now() >= deadline {
                return Err(RegistrationError::Expired);
            }
            pause = true;
            match self.poll(host, &begun.device_code, switched).await {
                Ok(Polled::Created(c)) => return Ok(c),
                Ok(Polled::Pending) => {}
                Ok(Polled::SlowDown) => interval = (interval + SLOW_DOWN_STEP).min(MAX_INTERVAL),
                Ok(Polled::SwitchToLark) => {
                    host = self.options.lark_accounts.as_str();
                    (switched, pause) = (true, false);
                }
                // lark-cli keeps going on a transport failure, one second slower; a few in a
                // row end the wait rather than spin until the deadline.
                Err(RegistrationError::Transport(e)) => {
                    failures += 1;
                    if failures >= MAX_TRANSPORT_FAILURES {
                        return Err(e.into());
                    }
                    interval = (interval + Duration::from_secs(1)).min(MAX_INTERVAL);
                    continue;
                }
                Err(e) => return Err(e),
            }
            failures = 0;
        }
    }

    /// One `action=poll` on `host`.
    async fn poll(
        &self,
        host: &str,
        device_code: &Secret,
        switched: bool,
    ) -> Result<Polled, RegistrationError> {
        let a = self
            .post(
                host,
                &[("action", "poll"), ("device_code", device_code.expose())],
            )
            .await?;
        match a.error.as_deref() {
            Some("authorization_pending") => return Ok(Polled::Pending),
            Some("slow_down") => return Ok(Polled::SlowDown),
            Some("access_denied") => return Err(RegistrationError::Denied),
            Some("expired_token" | "invalid_grant") => return Err(RegistrationError::Expired),
            Some(_) => refused(&a)?,
            None => {}
        }
        let info = a.user_info.unwrap_or_default();
        let lark = info.tenant_brand.as_deref() == Some("lark");
        let nonempty = |s: Option<String>| s.filter(|v| !v.is_empty());
        match (nonempty(a.client_id), nonempty(a.client_secret)) {
            (Some(id), Some(secret)) => Ok(Polled::Created(Created {
                credentials: Credentials::new(id, secret),
                open_id: nonempty(info.open_id),
                brand: if lark { Brand::Lark } else { Brand::Feishu },
            })),
            // The Feishu host may give a Lark tenant the ID without the secret.
            _ if lark && !switched => Ok(Polled::SwitchToLark),
            _ => Ok(Polled::Pending),
        }
    }

    /// Posts a form to `host`'s registration endpoint; the body is parsed whatever the status
    /// (pending and friends come with HTTP 400).
    async fn post(&self, host: &str, form: &[(&str, &str)]) -> Result<Answer, Error> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let resp = self
            .http
            .post(format!("{host}{REGISTRATION_PATH}"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await?;
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await?;
        let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(&bytes) else {
            return Err(Error::Http {
                status,
                retry_after: None,
            });
        };
        // Never seen, but AstrBot accepts the fields under `data`: lift them (unconfirmed).
        if let Some(Value::Object(data)) = map.remove("data") {
            for (k, v) in data {
                map.entry(k).or_insert(v);
            }
        }
        serde_json::from_value(Value::Object(map))
            .map_err(|e| Error::Decode(format!("registration answer (HTTP {status}): {e}")))
    }
}

/// An answer's `error` as [`RegistrationError::Refused`], if it has one.
fn refused(a: &Answer) -> Result<(), RegistrationError> {
    match &a.error {
        None => Ok(()),
        Some(error) => Err(RegistrationError::Refused {
            error: error.clone(),
            description: a.error_description.clone().unwrap_or_default(),
        }),
    }
}

/// The page link with the SDKs' parameters, ours overwriting any the server put there:
/// `from=sdk`, `tp=sdk`, `source=scv-bridge` (analytics, meaning unconfirmed), `createOnly=true`
/// (never "use an existing app": a scan must not hand out an app the bridge did not create) and
/// the suggested `name`.
pub fn qr_link(page: &str, app_name: &str) -> Result<String, Error> {
    let mut url = url::Url::parse(page)
        .map_err(|e| Error::Decode(format!("registration link is not a URL: {e}")))?;
    let ours = [
        ("from", "sdk"),
        ("tp", "sdk"),
        ("source", "scv-bridge"),
        ("createOnly", "true"),
        ("name", app_name),
    ];
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| !ours.iter().any(|(o, _)| o == k))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    url.query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .extend_pairs(ours);
    Ok(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_keeps_the_user_code_and_overwrites_tracking() {
        let l = qr_link(
            "https://open.feishu.cn/page/launcher?user_code=AB-CD&from=web&tp=x",
            "My bot",
        )
        .expect("a link");
        let u = url::Url::parse(&l).expect("a URL");
        let q: Vec<(String, String)> = u.query_pairs().into_owned().collect();
        let get = |k: &str| {
            q.iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("user_code"), ["AB-CD"]);
        assert_eq!(get("from"), ["sdk"]);
        assert_eq!(get("tp"), ["sdk"]);
        assert_eq!(get("source"), ["scv-bridge"]);
        assert_eq!(get("createOnly"), ["true"]);
        assert_eq!(get("name"), ["My bot"]);
    }

    #[test]
    fn the_device_code_never_prints() {
        let b = Begun {
            device_code: Secret::new("dc-hunter2"),
            user_code: "ABCD-EFGH".into(),
            qr_url: "https://x/".into(),
            expires_in: Duration::from_secs(600),
            interval: Duration::from_secs(5),
        };
        let c = Created {
            credentials: Credentials::new("cli_x", "app-hunter2"),
            open_id: None,
            brand: Brand::Feishu,
        };
        let shown = format!("{b:?} {c:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
}
