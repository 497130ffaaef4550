//! A real Dovecot + SMTP receiver per test, started by `scripts/mailserver` and stopped on
//! drop (and by `--watch-pid` if the test binary dies first). Needs the Debian packages
//! `dovecot-imapd` and `python3-aiosmtpd` (`scripts/mailserver install`).
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use scv_mail::{
    ImapSession, ImapSettings, MailAddress, OutgoingMail, Password, Security, SmtpSender,
    SmtpSettings, build_message,
};

/// `scripts/mailserver`, found from either the root package or `channels/mail` (this file is
/// shared by both packages' tests).
fn script() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        here.join("scripts/mailserver"),
        here.join("../../scripts/mailserver"),
    ]
    .into_iter()
    .find(|p| p.exists())
    .unwrap_or_else(|| here.join("scripts/mailserver"))
}

/// One running mail server instance.
pub struct MailServer {
    env: HashMap<String, String>,
}

impl MailServer {
    /// Starts an instance with the default user `test:secret` plus `extra` start options.
    pub fn start(extra: &[&str]) -> MailServer {
        let pid = std::process::id().to_string();
        let out = Command::new(script())
            .args(["start", "-q", "--watch-pid", &pid])
            .args(extra)
            .stdin(Stdio::null())
            .output()
            .expect("run scripts/mailserver (is it executable?)");
        assert!(
            out.status.success(),
            "mailserver start failed (install: scripts/mailserver install):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let env = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.trim_matches('\'').to_owned()))
            .collect();
        MailServer { env }
    }

    /// A variable printed by `mailserver start` (IMAP_PORT, MAIL_TLS_CA, ...).
    pub fn var(&self, key: &str) -> &str {
        self.env
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no {key} in mailserver env"))
    }

    fn port(&self, key: &str) -> u16 {
        self.var(key)
            .parse()
            .unwrap_or_else(|_| panic!("{key} is not a port"))
    }

    /// IMAP settings for the first user over the given transport.
    pub fn imap(&self, security: Security) -> ImapSettings {
        self.imap_as(security, self.var("IMAP_USER"), self.var("IMAP_PASS"))
    }

    /// IMAP settings for `user`:`pass` over the given transport, trusting the test CA.
    pub fn imap_as(&self, security: Security, user: &str, pass: &str) -> ImapSettings {
        let port = match security {
            Security::Tls => self.port("IMAPS_PORT"),
            _ => self.port("IMAP_PORT"),
        };
        let mut s = ImapSettings::new("127.0.0.1", port, security, user, Password::new(pass));
        s.tls_ca = Some(PathBuf::from(self.var("MAIL_TLS_CA")));
        s.timeout = Duration::from_secs(10);
        s
    }

    /// Connects and logs in as the first user over plain loopback.
    pub async fn login(&self) -> ImapSession {
        ImapSession::connect(&self.imap(Security::Plain))
            .await
            .expect("login")
    }

    /// SMTP settings with the first user's credentials, trusting the test CA.
    pub fn smtp(&self, security: Security) -> SmtpSettings {
        let port = match security {
            Security::Tls => self.port("SMTPS_PORT"),
            _ => self.port("SMTP_PORT"),
        };
        let creds = (
            self.var("SMTP_USER").to_owned(),
            Password::new(self.var("SMTP_PASS")),
        );
        let mut s = SmtpSettings::new("127.0.0.1", port, security, Some(creds));
        s.tls_ca = Some(PathBuf::from(self.var("MAIL_TLS_CA")));
        s.timeout = Duration::from_secs(10);
        s
    }

    /// Sends a plain message over SMTP (plain loopback); the receiver delivers it with
    /// dovecot-lda before it answers 250, so it is in the mailbox when this returns.
    pub async fn deliver(&self, to: &str, subject: &str, body: &str) {
        let sender = SmtpSender::new(&self.smtp(Security::Plain))
            .await
            .expect("smtp settings");
        let mail = OutgoingMail {
            from: MailAddress::new(Some("Sender"), "sender@example.com"),
            to: vec![MailAddress::new(None, to)],
            subject: subject.to_owned(),
            body: body.to_owned(),
            ..OutgoingMail::default()
        };
        let built = build_message(&mail).expect("build");
        sender.send(&built).await.expect("smtp send");
    }

    /// Runs doveadm against this instance; panics on failure.
    pub fn doveadm(&self, args: &[&str]) -> String {
        let out = Command::new("doveadm")
            .args(["-c", self.var("MAILSERVER_DOVECOT_CONF")])
            .args(args)
            .output()
            .expect("run doveadm");
        assert!(
            out.status.success(),
            "doveadm {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Flags of every message in `mailbox` of the first user, as doveadm sees them, without
    /// `\Recent` (a per-session flag that any SELECT clears by design).
    pub fn flags(&self, mailbox: &str) -> Vec<(u32, String)> {
        let user = self.var("IMAP_USER").to_owned();
        let out = self.doveadm(&[
            "-f",
            "tab",
            "fetch",
            "-u",
            &user,
            "uid flags",
            "mailbox",
            mailbox,
            "ALL",
        ]);
        out.lines()
            .skip(1)
            .filter_map(|l| {
                let (uid, flags) = l.split_once('\t')?;
                let kept: Vec<&str> = flags
                    .split_whitespace()
                    .filter(|f| *f != "\\Recent")
                    .collect();
                Some((uid.trim().parse().ok()?, kept.join(" ")))
            })
            .collect()
    }

    /// The mail user's home, below which Dovecot keeps the mailboxes and their indexes.
    pub fn mail_dir(&self) -> PathBuf {
        Path::new(self.var("MAILSERVER_DIR"))
            .join("mail")
            .join(self.var("IMAP_USER"))
    }

    /// The folder Dovecot writes its rawlog files in (needs `--rawlog`).
    pub fn rawlog_dir(&self) -> PathBuf {
        Path::new(self.var("MAILSERVER_DIR")).join("rawlog")
    }

    /// Everything the clients sent after login, from Dovecot's rawlog (needs `--rawlog`).
    pub fn rawlog_client_lines(&self) -> Vec<String> {
        let dir = self.rawlog_dir();
        let mut lines = Vec::new();
        for entry in std::fs::read_dir(&dir)
            .expect("rawlog dir (start with --rawlog)")
            .flatten()
        {
            if entry.path().extension().is_some_and(|e| e == "in") {
                let text = std::fs::read(entry.path()).unwrap_or_default();
                lines.extend(String::from_utf8_lossy(&text).lines().map(str::to_owned));
            }
        }
        lines
    }
}

impl Drop for MailServer {
    fn drop(&mut self) {
        if let Some(dir) = self.env.get("MAILSERVER_DIR") {
            let _ = Command::new(script())
                .args(["stop", "-q", "--now", dir])
                .status();
        }
    }
}

/// The path of a fixture file.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

impl MailServer {
    /// Sends a raw RFC 5322 message over SMTP to `to`.
    pub async fn deliver_raw(&self, to: &str, raw: String) {
        let sender = SmtpSender::new(&self.smtp(Security::Plain))
            .await
            .expect("smtp settings");
        let built = scv_mail::BuiltMessage {
            message_id: String::new(),
            raw: raw.into_bytes(),
            envelope_from: "sender@example.com".into(),
            envelope_to: vec![to.to_string()],
        };
        sender.send(&built).await.expect("smtp send");
    }

    /// Stops the servers but keeps the mail and ports (`stop --keep --now`).
    pub fn pause(&self) {
        let st = Command::new(script())
            .args(["stop", "-q", "--keep", "--now", self.var("MAILSERVER_DIR")])
            .status()
            .expect("stop");
        assert!(st.success());
    }

    /// Starts the servers again in the same directory.
    pub fn resume(&self) {
        let pid = std::process::id().to_string();
        let out = Command::new(script())
            .args([
                "start",
                "-q",
                "--watch-pid",
                &pid,
                "--dir",
                self.var("MAILSERVER_DIR"),
            ])
            .stdin(Stdio::null())
            .output()
            .expect("start");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
