//! The bed of `kill9_mail.rs`: a real Dovecot, the fake iLink and the fake model, the mail it
//! appended, and what the test reads back from them (the model's requests, the digests sent,
//! the claims left open, the mailbox's flags, the daemon's mail counters).

use super::*;

/// One test's world, shared by its rounds: the servers, the daemon's directory and the mail.
pub(crate) struct Bed {
    pub(crate) p: ProcessBed,
    pub(crate) imap: MailServer,
    pub(crate) wechat: FakeServer,
    pub(crate) model: FakeOpenAi,
    pub(crate) mail: Vec<Mail>,
    /// Each message's flags as appended (without `\Recent`), by UID.
    pub(crate) flags: BTreeMap<u32, String>,
    /// How often the daemons logged that they published the mail counters.
    pub(crate) published: LogCount,
}

impl Bed {
    /// Starts Dovecot, the fake iLink and the fake model (which triages by subject marker).
    pub(crate) async fn new() -> Bed {
        let imap = MailServer::start(&["--user", "test:secret"]);
        let wechat = FakeServer::start().await.expect("fake ilink");
        let model = FakeOpenAi::start().await.expect("fake model");
        model.respond_with(|r| {
            let user = r.messages.last()?.content.clone();
            let v: serde_json::Value = serde_json::from_str(&user).ok()?;
            let decisions: Vec<serde_json::Value> = v["untrusted_emails"]
                .as_array()?
                .iter()
                .map(|e| {
                    let id = e["id"].as_str().unwrap_or_default();
                    let subject = e["subject"].as_str().unwrap_or_default();
                    let (report, urgency, summary) = if subject.contains(Kind::Urgent.tag()) {
                        (true, "urgent", "Act today")
                    } else if subject.contains(Kind::Skip.tag()) {
                        (false, "low", "")
                    } else {
                        (true, "normal", "Worth a look")
                    };
                    serde_json::json!({"id": id, "report": report, "urgency": urgency, "summary": summary})
                })
                .collect();
            Some(Reply::text(
                &serde_json::json!({ "decisions": decisions }).to_string(),
            ))
        });
        let p = ProcessBed::new(
            |_| {
                format!(
                    "timezone = \"UTC\"\n\
                     [agent]\nbackend = \"openai\"\nbase_url = \"{model}\"\nmodel = \"triage\"\n\
                     [wechat.inbox]\npurpose = \"mail\"\nbase_url = \"{ilink}\"\n\
                     [mail.box]\nimap_host = \"127.0.0.1\"\nimap_port = {port}\ntls = \"none\"\n\
                     username = \"test\"\nreport_to = \"wechat:inbox\"\ntriage_batch = 2\n",
                    model = model.base_url(),
                    ilink = wechat.base_url(),
                    port = imap.var("IMAP_PORT"),
                )
            },
            &[("RUST_LOG", "trace"), ("NO_COLOR", "1")],
        );
        p.save_login("wechat:inbox", &wechat_login(&wechat, OWNER));
        p.save_login(
            MAIL,
            &Credentials::default()
                .with("password", imap.var("IMAP_PASS"))
                .with("address", "test@mail.test"),
        );
        let published = LogCount::new(p.path("daemon.log"), "mail counters published");
        Bed {
            p,
            imap,
            wechat,
            model,
            mail: Vec::new(),
            flags: BTreeMap::new(),
            published,
        }
    }

    /// The fake iLink's handle.
    pub(crate) fn ilink(&self) -> FakeHandle {
        self.wechat.handle()
    }

    /// Starts the real binary on the bed.
    pub(crate) fn spawn(&self) -> Daemon {
        self.p.spawn()
    }

    /// What the daemons logged so far.
    pub(crate) fn log(&self) -> String {
        self.p.log()
    }

    /// APPENDs one mail per kind over IMAP (some `\Seen`, one `\Flagged`, most unflagged).
    pub(crate) async fn append(&mut self, round: usize, kinds: &[Kind]) {
        let mut imap = ImapSession::connect(&self.imap.imap(Security::Plain))
            .await
            .expect("imap login");
        for (i, &kind) in kinds.iter().enumerate() {
            let n = self.mail.len();
            let subject = format!("[k9 r{round} m{i}] {}", kind.tag());
            let body_marker = format!("Quokka{n}Body{}x{round}y{i}", std::process::id());
            let (from, extra) = match kind {
                Kind::Bulk => (
                    "News <news@example.com>",
                    "List-Unsubscribe: <mailto:u@example.com>\r\nPrecedence: bulk\r\n",
                ),
                _ => ("Sender <sender@example.com>", ""),
            };
            let raw = format!(
                "From: {from}\r\nTo: test@mail.test\r\nSubject: {subject}\r\n\
                 Message-ID: <k9-{n}-{}@example.com>\r\nDate: {}\r\n{extra}\
                 Content-Type: text/plain; charset=utf-8\r\n\r\nHello,\r\n{body_marker}\r\nBye\r\n",
                std::process::id(),
                chrono::Utc::now().to_rfc2822(),
            );
            let flags: &[&str] = match n % 4 {
                1 => &["\\Seen"],
                3 if n % 8 == 3 => &["\\Flagged"],
                _ => &[],
            };
            imap.append("INBOX", flags, raw.as_bytes())
                .await
                .expect("APPEND");
            self.mail.push(Mail {
                kind,
                subject,
                body_marker,
            });
        }
        imap.logout().await;
        self.check_flags();
    }

    /// Flags of earlier mail are as they were appended; new mail's flags are noted.
    pub(crate) fn check_flags(&mut self) {
        for (uid, flags) in self.imap.flags("INBOX") {
            let was = self.flags.entry(uid).or_insert_with(|| flags.clone());
            assert_eq!(*was, flags, "the flags of UID {uid} changed");
        }
        assert_eq!(self.flags.len(), self.mail.len(), "{:?}", self.flags);
    }

    /// The subjects each triage request asked about, in order (two at most: `triage_batch = 2`).
    pub(crate) fn asked(&self) -> Vec<Vec<String>> {
        self.model
            .requests()
            .iter()
            .map(|r| {
                r.messages
                    .last()
                    .and_then(|m| serde_json::from_str::<serde_json::Value>(&m.content).ok())
                    .and_then(|v| {
                        v["untrusted_emails"].as_array().map(|es| {
                            es.iter()
                                .filter_map(|e| e["subject"].as_str().map(str::to_owned))
                                .collect()
                        })
                    })
                    .unwrap_or_else(|| vec!["(not a triage request)".to_owned()])
            })
            .collect()
    }

    /// The texts iLink accepted, in order.
    pub(crate) fn sent(&self) -> Vec<String> {
        self.ilink().sent().into_iter().map(|s| s.text).collect()
    }

    /// Subjects of the claims left open (claimed, not decided) in the store; the daemon is dead.
    pub(crate) fn open_claims(&self) -> BTreeSet<String> {
        let db = rusqlite::Connection::open(self.p.db()).expect("open the store");
        let mut st = db
            .prepare("SELECT uid FROM mail_claims WHERE account = ?1 AND state = 'claimed'")
            .expect("query");
        let uids: Vec<u32> = st
            .query_map([MAIL], |r| r.get(0))
            .expect("claims")
            .collect::<Result<_, _>>()
            .expect("claims");
        let subjects = self.subjects_by_uid();
        uids.iter()
            .map(|u| {
                subjects
                    .get(u)
                    .cloned()
                    .unwrap_or_else(|| format!("uid {u}"))
            })
            .collect()
    }

    /// UID → subject, as Dovecot has them.
    pub(crate) fn subjects_by_uid(&self) -> BTreeMap<u32, String> {
        let out = self.imap.doveadm(&[
            "-f",
            "tab",
            "fetch",
            "-u",
            "test",
            "uid hdr.subject",
            "mailbox",
            "INBOX",
            "ALL",
        ]);
        out.lines()
            .skip(1)
            .filter_map(|l| {
                let (uid, subject) = l.split_once('\t')?;
                Some((uid.trim().parse().ok()?, subject.trim().to_owned()))
            })
            .collect()
    }

    /// The mail account's counters from the control socket, when the daemon answers.
    pub(crate) async fn mail_counts(&self) -> Option<MailCounts> {
        let status = scv_bridge::client::request(&self.p.socket(), DaemonCommand::Status)
            .await
            .ok()?;
        status
            .components
            .into_iter()
            .find(|c| c.id == MAIL)
            .and_then(|c| c.mail)
    }

    /// What a failing assertion prints: the model's requests, the sends, the refusals, the log's tail.
    pub(crate) fn report(&self) -> String {
        format!(
            "model asked: {:?}\nsent: {:#?}\nrejected: {:?}\nlog tail:\n{}",
            self.asked(),
            self.sent(),
            self.ilink().rejected(),
            tail(&self.log(), 60),
        )
    }

    /// Waits until the mail account's counters (from the control socket) satisfy `f`. They live
    /// in the daemon's memory, and the daemon logs each time it published new ones, so the
    /// socket is asked again after each such line, never on a clock.
    pub(crate) async fn wait_counts(&self, what: &str, f: impl Fn(&MailCounts) -> bool) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            // Counted before asking: counters published after the answer was read are logged
            // after it, so the wait below sees them.
            let published = self.published.count();
            let counts = self.mail_counts().await;
            if counts.as_ref().is_some_and(&f) {
                return;
            }
            assert!(
                self.published.above(published, deadline).await,
                "timed out waiting for {what}: {counts:?}\n{}",
                self.report()
            );
        }
    }

    /// Waits until `f` (on what iLink and the model saw) holds, checked again at each change.
    pub(crate) async fn wait_until(&self, what: &str, f: impl FnMut() -> bool) {
        self.p
            .wait_until(
                PATIENCE,
                what,
                &[&self.wechat, &self.model],
                || self.report(),
                f,
            )
            .await;
    }
}
