//! Sending over SMTP with lettre, and building threaded replies. A message is built first
//! ([`build_message`]) so that the caller can store its bytes and Message-ID before sending,
//! and append the same bytes to the Sent folder afterwards.

use std::error::Error as StdError;
use std::fmt;

use lettre::address::Envelope;
use lettre::message::{Mailbox, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, CertificateStore, Tls, TlsParameters};
use lettre::{Address, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use rand::Rng;
use tokio_rustls::rustls;

use crate::error::{MailError, Result};
use crate::item::{MailAddress, MailItem};
use crate::settings::{Security, SmtpSettings};
use crate::tls;

/// References kept in a reply: the newest ones, enough for any threading client.
const MAX_REPLY_REFERENCES: usize = 20;

/// A plain-text message to send. Debug shows no addresses or text.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct OutgoingMail {
    /// Sender (the account's own address).
    pub from: MailAddress,
    /// Recipients.
    pub to: Vec<MailAddress>,
    /// Copy recipients.
    pub cc: Vec<MailAddress>,
    /// Subject.
    pub subject: String,
    /// Plain-text body.
    pub body: String,
    /// Message-ID this answers, without angle brackets.
    pub in_reply_to: Option<String>,
    /// Thread Message-IDs, oldest first, without angle brackets.
    pub references: Vec<String>,
}

impl fmt::Debug for OutgoingMail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingMail")
            .field("to_count", &self.to.len())
            .field("cc_count", &self.cc.len())
            .field("is_reply", &self.in_reply_to.is_some())
            .field("body_bytes", &self.body.len())
            .finish_non_exhaustive()
    }
}

/// A message ready to send: its bytes, Message-ID and envelope. Keep it to resend
/// unchanged after a crash (same Message-ID), and to append `raw` to the Sent folder.
#[derive(Clone, PartialEq, Eq)]
pub struct BuiltMessage {
    /// The Message-ID, without angle brackets.
    pub message_id: String,
    /// The complete RFC 5322 message.
    pub raw: Vec<u8>,
    /// Envelope sender.
    pub envelope_from: String,
    /// Envelope recipients (To and Cc).
    pub envelope_to: Vec<String>,
}

impl fmt::Debug for BuiltMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BuiltMessage")
            .field("raw_bytes", &self.raw.len())
            .field("recipients", &self.envelope_to.len())
            .finish_non_exhaustive()
    }
}

/// The subject of a reply: `Re: ` added once, never stacked.
pub fn reply_subject(subject: &str) -> String {
    let trimmed = subject.trim();
    let lower = trimmed.to_lowercase();
    let already = ["re:", "re :", "回复:", "回复："]
        .iter()
        .any(|p| lower.starts_with(p));
    if already {
        trimmed.to_owned()
    } else {
        format!("Re: {trimmed}")
    }
}

/// A threaded reply to `original` from `from`: to its Reply-To (or From), with In-Reply-To
/// and References set and `Re: ` added once to the subject.
pub fn reply_to(original: &MailItem, from: MailAddress, body: &str) -> Result<OutgoingMail> {
    let to = original
        .reply_to
        .clone()
        .or_else(|| original.from.clone())
        .filter(|a| !a.address.is_empty())
        .ok_or_else(|| MailError::Build("the original has no sender address".to_owned()))?;
    let mut references = original.references.clone();
    if let Some(id) = &original.message_id
        && !references.contains(id)
    {
        references.push(id.clone());
    }
    if references.len() > MAX_REPLY_REFERENCES {
        // Keep the thread root (first) and the newest: what RFC 5322 §3.6.4 suggests.
        let cut = references.len() - (MAX_REPLY_REFERENCES - 1);
        references.drain(1..cut);
    }
    Ok(OutgoingMail {
        from,
        to: vec![to],
        cc: Vec::new(),
        subject: reply_subject(&original.subject),
        body: body.to_owned(),
        in_reply_to: original.message_id.clone(),
        references,
    })
}

fn mailbox(a: &MailAddress) -> Result<Mailbox> {
    let address: Address = a
        .address
        .parse()
        .map_err(|_| MailError::Build("invalid mail address".to_owned()))?;
    Ok(Mailbox::new(a.name.clone(), address))
}

/// A Message-ID is an atom: anything else could inject header text.
fn valid_id(id: &str) -> Result<&str> {
    let ok = !id.is_empty()
        && id.len() <= 250
        && id
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"<>()\\\",;[]".contains(&b));
    if ok {
        Ok(id)
    } else {
        Err(MailError::Build("invalid Message-ID".to_owned()))
    }
}

/// Builds the message with a fresh Message-ID at the sender's domain and today's Date.
pub fn build_message(mail: &OutgoingMail) -> Result<BuiltMessage> {
    if mail.to.is_empty() && mail.cc.is_empty() {
        return Err(MailError::Build("no recipient".to_owned()));
    }
    let domain = mail
        .from
        .address
        .rsplit_once('@')
        .map(|(_, d)| d)
        .unwrap_or("localhost");
    let token: u128 = rand::rng().random();
    let message_id = format!("{token:032x}.scv@{domain}");
    valid_id(&message_id)?;

    let mut builder = Message::builder()
        .from(mailbox(&mail.from)?)
        .subject(mail.subject.clone())
        .message_id(Some(format!("<{message_id}>")))
        .date_now();
    for a in &mail.to {
        builder = builder.to(mailbox(a)?);
    }
    for a in &mail.cc {
        builder = builder.cc(mailbox(a)?);
    }
    if let Some(parent) = &mail.in_reply_to {
        builder = builder.in_reply_to(format!("<{}>", valid_id(parent)?));
    }
    if !mail.references.is_empty() {
        let refs: Result<Vec<String>> = mail
            .references
            .iter()
            .map(|r| valid_id(r).map(|r| format!("<{r}>")))
            .collect();
        builder = builder.references(refs?.join(" "));
    }
    let message = builder
        .header(ContentType::TEXT_PLAIN)
        .body(mail.body.clone())
        .map_err(|e| MailError::Build(e.to_string()))?;
    let envelope = message.envelope();
    Ok(BuiltMessage {
        message_id,
        raw: message.formatted(),
        envelope_from: envelope.from().map(|a| a.to_string()).unwrap_or_default(),
        envelope_to: envelope.to().iter().map(|a| a.to_string()).collect(),
    })
}

/// An SMTP client for one account. Cheap to keep; connects per send.
#[derive(Clone)]
pub struct SmtpSender {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    timeout_secs: u64,
}

impl fmt::Debug for SmtpSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpSender").finish_non_exhaustive()
    }
}

impl SmtpSender {
    /// Checks the settings (loopback rule for plain text, the CA file) and prepares a client.
    pub async fn new(settings: &SmtpSettings) -> Result<Self> {
        tls::resolve(&settings.host, settings.port, settings.security).await?;
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&settings.host)
            .port(settings.port)
            .timeout(Some(settings.timeout));
        if settings.security != Security::Plain {
            let parameters = tls_parameters(settings)?;
            builder = builder.tls(match settings.security {
                Security::Tls => Tls::Wrapper(parameters),
                _ => Tls::Required(parameters),
            });
        }
        if let Some((user, password)) = &settings.credentials {
            builder =
                builder.credentials(Credentials::new(user.clone(), password.expose().to_owned()));
        }
        Ok(SmtpSender {
            transport: builder.build(),
            timeout_secs: settings.timeout.as_secs(),
        })
    }

    /// Connects, says EHLO (and logs in), and disconnects: a health or settings check.
    pub async fn verify(&self) -> Result<()> {
        match self.transport.test_connection().await {
            Ok(true) => Ok(()),
            Ok(false) => Err(MailError::Protocol {
                op: "smtp",
                detail: "not ready".into(),
            }),
            Err(e) => Err(smtp_error(&e, self.timeout_secs)),
        }
    }

    /// Sends a built message as it is.
    pub async fn send(&self, message: &BuiltMessage) -> Result<()> {
        let parse = |s: &str| {
            s.parse::<Address>()
                .map_err(|_| MailError::Build("bad envelope".into()))
        };
        let from = Some(parse(&message.envelope_from)?);
        let to = message
            .envelope_to
            .iter()
            .map(|s| parse(s))
            .collect::<Result<Vec<_>>>()?;
        let envelope = Envelope::new(from, to).map_err(|e| MailError::Build(e.to_string()))?;
        self.transport
            .send_raw(&envelope, &message.raw)
            .await
            .map(|_| ())
            .map_err(|e| smtp_error(&e, self.timeout_secs))
    }
}

fn tls_parameters(settings: &SmtpSettings) -> Result<TlsParameters> {
    let mut builder = TlsParameters::builder(settings.host.clone());
    if !tls::system_roots_available() {
        // Minimal containers ship no CA bundle; the Mozilla set keeps public servers working.
        builder = builder.certificate_store(CertificateStore::WebpkiRoots);
    }
    if let Some(path) = &settings.tls_ca {
        for der in tls::read_ca_file(path)? {
            let cert = Certificate::from_der(der.to_vec())
                .map_err(|e| MailError::Config(format!("tls_ca {}: {e}", path.display())))?;
            builder = builder.add_root_certificate(cert);
        }
    }
    builder
        .build_rustls()
        .map_err(|e| MailError::Config(format!("SMTP TLS setup: {e}")))
}

/// Converts a lettre error. Reply texts are dropped: they often echo addresses.
pub(crate) fn smtp_error(e: &lettre::transport::smtp::Error, timeout_secs: u64) -> MailError {
    if let Some(code) = e.status() {
        let code = u16::from(code);
        return match code {
            // 535 bad credentials, 534 mechanism too weak / web login needed, 530 auth required.
            530 | 534 | 535 => MailError::AuthRejected(format!("SMTP {code}")),
            400..=499 => MailError::SmtpTemporary { code },
            _ => MailError::SmtpRejected { code },
        };
    }
    if let Some(tls_error) = find_rustls(e) {
        return MailError::from_rustls(tls_error);
    }
    if e.is_timeout() {
        return MailError::Timeout {
            op: "smtp",
            secs: timeout_secs,
        };
    }
    if e.is_tls() {
        return MailError::Tls("SMTP TLS failure".to_owned());
    }
    MailError::Network {
        op: "smtp",
        source: std::io::Error::other(e.to_string()),
    }
}

/// Finds a rustls error in a source chain, directly or inside an `io::Error`.
fn find_rustls<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    let mut current: Option<&(dyn StdError + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(r) = err.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && let Some(r) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
        {
            return Some(r);
        }
        current = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn re_is_added_once() {
        assert_eq!(reply_subject("Invoice"), "Re: Invoice");
        assert_eq!(reply_subject("Re: Invoice"), "Re: Invoice");
        assert_eq!(reply_subject("RE: Invoice"), "RE: Invoice");
        assert_eq!(reply_subject("回复：发票"), "回复：发票");
        assert_eq!(reply_subject(""), "Re: ");
    }

    #[test]
    fn reply_threads_and_bounds_references() {
        let original = MailItem {
            message_id: Some("m30@x".into()),
            from: Some(MailAddress::new(Some("Alice"), "alice@example.com")),
            subject: "Plan".into(),
            references: (0..30).map(|i| format!("m{i}@x")).collect(),
            ..MailItem::default()
        };
        let me = MailAddress::new(None, "me@example.com");
        let reply = reply_to(&original, me, "ok").unwrap();
        assert_eq!(reply.to[0].address, "alice@example.com");
        assert_eq!(reply.in_reply_to.as_deref(), Some("m30@x"));
        assert_eq!(reply.references.len(), MAX_REPLY_REFERENCES);
        assert_eq!(reply.references.first().map(String::as_str), Some("m0@x"));
        assert_eq!(reply.references.last().map(String::as_str), Some("m30@x"));
        assert_eq!(reply.subject, "Re: Plan");
    }

    #[test]
    fn reply_prefers_reply_to_and_needs_a_sender() {
        let mut original = MailItem {
            from: Some(MailAddress::new(None, "list@example.com")),
            reply_to: Some(MailAddress::new(None, "person@example.com")),
            ..MailItem::default()
        };
        let me = MailAddress::new(None, "me@example.com");
        assert_eq!(
            reply_to(&original, me.clone(), "x").unwrap().to[0].address,
            "person@example.com"
        );
        original.from = None;
        original.reply_to = None;
        assert!(matches!(
            reply_to(&original, me, "x"),
            Err(MailError::Build(_))
        ));
    }

    #[test]
    fn hostile_ids_are_refused() {
        let mail = OutgoingMail {
            from: MailAddress::new(None, "me@example.com"),
            to: vec![MailAddress::new(None, "you@example.com")],
            in_reply_to: Some("x>\r\nBcc: evil@example.com".into()),
            ..OutgoingMail::default()
        };
        assert!(matches!(build_message(&mail), Err(MailError::Build(_))));
        let no_rcpt = OutgoingMail { to: vec![], ..mail };
        assert!(matches!(build_message(&no_rcpt), Err(MailError::Build(_))));
    }
}
