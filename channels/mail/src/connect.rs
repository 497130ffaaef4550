//! Opening an IMAP session: TCP, TLS or STARTTLS, the greeting, login, CAPABILITY and ID.

use std::collections::BTreeSet;

use async_imap::imap_proto::{Capability, RequestId, Response, ResponseCode, Status};
use async_imap::{Authenticator, Client};
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::error::{MailError, Result};
use crate::session::{ImapSession, ImapStats, timed};
use crate::settings::{ImapAuth, ImapSettings, Security};
use crate::stream::MailStream;
use crate::tls;

impl ImapSession {
    /// Connects, logs in and (when advertised) sends ID. No mailbox is selected yet.
    pub async fn connect(settings: &ImapSettings) -> Result<ImapSession> {
        let limit = settings.timeout;
        match tokio::time::timeout(limit, open(settings)).await {
            Ok(r) => r,
            Err(_) => Err(MailError::Timeout {
                op: "connect",
                secs: limit.as_secs(),
            }),
        }
    }
}

async fn open(settings: &ImapSettings) -> Result<ImapSession> {
    let (client, greeting_caps) = open_client(settings).await?;
    let tls = client.get_ref().is_tls();
    let use_plain = match settings.auth {
        ImapAuth::Plain => true,
        ImapAuth::Login => false,
        ImapAuth::Auto => greeting_caps.contains("AUTH=PLAIN"),
    };
    let user = settings.user.as_str();
    let pass = settings.password.expose();
    let logged_in = if use_plain {
        client.authenticate("PLAIN", PlainAuth { user, pass }).await
    } else {
        client.login(user, pass).await
    };
    let mut session = logged_in.map_err(|(e, _client)| MailError::from_imap("login", e))?;

    // The greeting's list is the pre-login one (no MOVE, UIDPLUS, SPECIAL-USE): ask again.
    let caps = timed("capability", settings.timeout, session.capabilities()).await?;
    let capabilities: BTreeSet<String> = caps.iter().map(capability_name).collect();

    if capabilities.contains("ID") {
        let (name, version) = &settings.client_id;
        let id = [
            ("name", Some(name.as_str())),
            ("version", Some(version.as_str())),
        ];
        match timed("id", settings.timeout, session.id(id)).await {
            Ok(_) => {}
            // Some servers advertise ID and then refuse it; the session is still fine.
            Err(MailError::ServerNo { .. }) => tracing::debug!("server refused ID"),
            Err(MailError::Protocol { .. }) => tracing::debug!("server answered ID with BAD"),
            Err(e) => return Err(e),
        }
    }
    let (listening, _) = watch::channel(false);
    Ok(ImapSession {
        inner: Some(session),
        capabilities,
        settings: settings.clone(),
        selected: None,
        stats: ImapStats::default(),
        listening,
        heard: watch::channel(0).0,
        tls,
    })
}

/// Opens the transport and returns the unauthenticated client plus the capabilities known
/// before login (from the greeting, or asked for after STARTTLS).
async fn open_client(settings: &ImapSettings) -> Result<(Client<MailStream>, BTreeSet<String>)> {
    let addrs = tls::resolve(&settings.host, settings.port, settings.security).await?;
    // Build the TLS configuration first: a bad CA file should fail before any network traffic.
    let tls_config = match settings.security {
        Security::Plain => None,
        _ => Some(tls::client_config(settings.tls_ca.as_deref())?),
    };
    let tcp = tls::connect_tcp(&addrs).await?;
    match (settings.security, tls_config) {
        (Security::Tls, Some(config)) => {
            let stream = tls::handshake(tcp, &settings.host, config).await?;
            let mut client = Client::new(MailStream::Tls(Box::new(stream)));
            let caps = read_greeting(&mut client).await?;
            Ok((client, caps))
        }
        (Security::StartTls, Some(config)) => {
            let mut client = Client::new(MailStream::Plain(tcp));
            read_greeting(&mut client).await?;
            client
                .run_command_and_check_ok("STARTTLS", None)
                .await
                .map_err(|e| match e {
                    async_imap::error::Error::No(_) | async_imap::error::Error::Bad(_) => {
                        MailError::Unsupported("STARTTLS".to_owned())
                    }
                    other => MailError::from_imap("starttls", other),
                })?;
            // Anything the server sent after its OK is dropped with the old client: bytes
            // injected before the handshake must never be read as protected data.
            let MailStream::Plain(tcp) = client.into_inner() else {
                return Err(MailError::Protocol {
                    op: "starttls",
                    detail: "not plain".into(),
                });
            };
            let stream = tls::handshake(tcp, &settings.host, config).await?;
            let mut client = Client::new(MailStream::Tls(Box::new(stream)));
            let caps = ask_capabilities(&mut client).await?;
            Ok((client, caps))
        }
        _ => {
            let mut client = Client::new(MailStream::Plain(tcp));
            let caps = read_greeting(&mut client).await?;
            Ok((client, caps))
        }
    }
}

/// Reads the `* OK` greeting; returns the capabilities it carries, if any.
async fn read_greeting(client: &mut Client<MailStream>) -> Result<BTreeSet<String>> {
    let response = client
        .read_response()
        .await
        .map_err(|e| MailError::from_io("greeting", e))?
        .ok_or_else(|| MailError::ServerBye("closed before greeting".to_owned()))?;
    match response.parsed() {
        Response::Data {
            status: Status::Ok,
            outcome,
        } => Ok(match &outcome.code {
            Some(ResponseCode::Capabilities(caps)) => caps.iter().map(proto_capability).collect(),
            _ => BTreeSet::new(),
        }),
        Response::Data {
            status: Status::Bye,
            ..
        } => Err(MailError::ServerBye(
            "server refused the connection".to_owned(),
        )),
        Response::Data {
            status: Status::PreAuth,
            ..
        } => Ok(BTreeSet::new()),
        _ => Err(MailError::Protocol {
            op: "greeting",
            detail: "no OK greeting".into(),
        }),
    }
}

/// Sends CAPABILITY on an unauthenticated client. async-imap offers it only after login,
/// so the command is written with a tag of our own that its `A0001` series never uses.
async fn ask_capabilities(client: &mut Client<MailStream>) -> Result<BTreeSet<String>> {
    const TAG: &str = "S0";
    let stream = client.get_mut();
    let write = async {
        stream.write_all(b"S0 CAPABILITY\r\n").await?;
        stream.flush().await
    };
    write
        .await
        .map_err(|e| MailError::from_io("capability", e))?;
    let mut caps = BTreeSet::new();
    loop {
        let response = client
            .read_response()
            .await
            .map_err(|e| MailError::from_io("capability", e))?
            .ok_or_else(|| MailError::ServerBye("closed during CAPABILITY".to_owned()))?;
        match response.parsed() {
            Response::Capabilities(list) => caps.extend(list.iter().map(proto_capability)),
            Response::Done {
                tag: RequestId(tag),
                status,
                ..
            } if tag == TAG => {
                return match status {
                    Status::Ok => Ok(caps),
                    _ => Err(MailError::Protocol {
                        op: "capability",
                        detail: "refused".into(),
                    }),
                };
            }
            _ => {}
        }
    }
}

fn proto_capability(c: &Capability<'_>) -> String {
    match c {
        Capability::Imap4rev1 => "IMAP4REV1".to_owned(),
        Capability::Auth(a) => format!("AUTH={}", a.to_ascii_uppercase()),
        Capability::Atom(a) => a.to_ascii_uppercase(),
    }
}

fn capability_name(c: &async_imap::types::Capability) -> String {
    use async_imap::types::Capability as C;
    match c {
        C::Imap4rev1 => "IMAP4REV1".to_owned(),
        C::Auth(a) => format!("AUTH={}", a.to_ascii_uppercase()),
        C::Atom(a) => a.to_ascii_uppercase(),
    }
}

/// SASL PLAIN (RFC 4616): authorization id empty, then user and password, NUL-separated.
struct PlainAuth<'a> {
    user: &'a str,
    pass: &'a str,
}

impl Authenticator for PlainAuth<'_> {
    type Response = Vec<u8>;

    fn process(&mut self, _challenge: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.user.len() + self.pass.len() + 2);
        out.push(0);
        out.extend_from_slice(self.user.as_bytes());
        out.push(0);
        out.extend_from_slice(self.pass.as_bytes());
        out
    }
}
