//! Mail's doctor probes, a mail account's servers for real: the TLS handshake (implicit or STARTTLS) verified against the
//! system's roots plus `tls_ca`, then IMAP LOGIN/LOGOUT and SMTP EHLO/AUTH with the stored password.

use scv_mail::{ErrorClass, ImapSession, MailError, Password, SmtpSender};

use crate::config::{MailSettings, MailTls};
use crate::probe::{Check, CheckId};
use crate::secrets::Credentials;

/// The IMAP probe's id in `doctor --json`.
pub const IMAP: &str = "mail.imap";
/// The SMTP probe's id.
pub const SMTP: &str = "mail.smtp";

/// The IMAP check, and the SMTP one when replies are configured.
pub async fn checks(
    id: &str,
    account: &str,
    m: &MailSettings,
    creds: Option<&Credentials>,
    login: &str,
) -> Vec<Check> {
    // Without a password the credentials check has already failed with its fix.
    let Some(password) = creds
        .and_then(|c| c.get(super::PASSWORD_FIELD))
        .map(|p| p.expose().to_string())
    else {
        return Vec::new();
    };
    let imap = crate::mail::imap_settings(m, Password::new(&password));
    let endpoint = format!("IMAP {}:{} ({})", imap.host, imap.port, security(m.tls));
    let mut out = vec![match ImapSession::connect(&imap).await {
        Ok(session) => {
            session.logout().await;
            Check::pass(
                CheckId::Platform(IMAP),
                format!(
                    "{id}: {endpoint}: {}LOGIN as {} accepted, then LOGOUT",
                    verified(m.tls),
                    m.username
                ),
            )
        }
        Err(e) => failure(
            CheckId::Platform(IMAP),
            id,
            account,
            m,
            &endpoint,
            &e,
            login,
        ),
    }];
    if let Some(smtp) = super::smtp_settings(m, Password::new(&password)) {
        let smtp_tls = m.smtp_tls.unwrap_or(m.tls);
        let endpoint = format!("SMTP {}:{} ({})", smtp.host, smtp.port, security(smtp_tls));
        let checked = match SmtpSender::new(&smtp).await {
            Ok(sender) => sender.verify().await,
            Err(e) => Err(e),
        };
        out.push(match checked {
            Ok(()) => Check::pass(
                CheckId::Platform(SMTP),
                format!(
                    "{id}: {endpoint}: {}EHLO and AUTH as {} accepted",
                    verified(smtp_tls),
                    m.username
                ),
            ),
            Err(e) => failure(
                CheckId::Platform(SMTP),
                id,
                account,
                m,
                &endpoint,
                &e,
                login,
            ),
        });
    }
    out
}

fn security(tls: MailTls) -> &'static str {
    match tls {
        MailTls::Implicit => "implicit TLS",
        MailTls::Starttls => "STARTTLS",
        MailTls::None => "no TLS, loopback only",
    }
}

/// What a successful TLS handshake proved, for the pass line; nothing for a plain connection.
fn verified(tls: MailTls) -> &'static str {
    match tls {
        MailTls::None => "",
        _ => "certificate verified, ",
    }
}

/// What failed, and the one key or command that fixes it.
fn failure(
    check: CheckId,
    id: &str,
    account: &str,
    m: &MailSettings,
    endpoint: &str,
    e: &MailError,
    login: &str,
) -> Check {
    let untrusted = matches!(e, MailError::Certificate(_))
        || (matches!(e, MailError::Tls(_)) && e.to_string().contains("certificate"));
    if untrusted {
        let fix = match &m.tls_ca {
            None => format!(
                "if the server's certificate comes from a private CA, set tls_ca = \"/path/to/ca.pem\" under [mail.{account}]; otherwise check the host name and the system's CA certificates"
            ),
            Some(ca) => format!(
                "tls_ca = \"{ca}\" does not vouch for this server: point tls_ca under [mail.{account}] at the CA that signed its certificate"
            ),
        };
        return Check::fail(
            check,
            format!("{id}: {endpoint}: the TLS certificate is not trusted ({e})"),
            fix,
        );
    }
    if let MailError::Config(detail) = e
        && detail.contains("tls_ca")
    {
        return Check::fail(
            check,
            format!("{id}: {detail}"),
            format!("set tls_ca under [mail.{account}] to a readable PEM file of CA certificates"),
        );
    }
    if matches!(e.classify(), ErrorClass::Fatal { auth: true }) {
        return Check::fail(
            check,
            format!("{id}: {endpoint} rejected the login for {}", m.username),
            format!("run `{login}` with the right password (or an app password)"),
        );
    }
    Check::fail(
        check,
        format!("{id}: {endpoint}: {e}"),
        format!(
            "check the host, port and tls settings under [mail.{account}] and the network; a running account retries meanwhile"
        ),
    )
}
