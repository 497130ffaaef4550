//! `scv-bridge login feishu` with no app ID: a new app is created by scanning (against the fake
//! accounts host), verified against the fake Feishu and stored as a typed login would be; the
//! typed path still asks the secret.

use crate::feishu_support;

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use scv_bridge::config::{Channel, Config};
use scv_bridge::login::LoginArgs;
use scv_bridge::port::login_flow::{Field, LoginUi, Shown};
use scv_bridge::secrets::CredentialStore;
use scv_feishu::fake::{FakeConfig, FakeFeishu, FakeRegistration, PollFault, RegistrationConfig};
use tokio::sync::watch;

use feishu_support::{ACCOUNT, Harness, OWNER, TestAgent, WAIT, write_config};
use scv_bridge::protocol::ComponentState;

/// A login UI that answers from a list and records what it showed, in a watch so the phone
/// wakes on what was shown rather than on a clock.
#[derive(Clone)]
struct ScriptedUi {
    events: Arc<watch::Sender<Vec<Shown>>>,
    answers: Arc<std::sync::Mutex<Vec<(&'static str, String)>>>,
    asked: Arc<std::sync::Mutex<Vec<&'static str>>>,
}

impl ScriptedUi {
    fn answering(answers: &[(&'static str, &str)]) -> Self {
        let answers = answers.iter().map(|(k, v)| (*k, v.to_string())).collect();
        Self {
            events: Arc::new(watch::Sender::new(Vec::new())),
            answers: Arc::new(std::sync::Mutex::new(answers)),
            asked: Arc::default(),
        }
    }

    /// The `number`th code's link, once it was shown.
    async fn wait_qr(&self, number: u32) -> String {
        let mut events = self.events.subscribe();
        let found = |e: &Vec<Shown>| {
            e.iter().find_map(|s| match s {
                Shown::Qr { url, number: n, .. } if *n == number => Some(url.clone()),
                _ => None,
            })
        };
        let seen = tokio::time::timeout(WAIT, events.wait_for(|e| found(e).is_some()))
            .await
            .expect("the code is shown in time")
            .expect("ui alive");
        found(&seen).expect("found")
    }

    fn shown(&self) -> Vec<Shown> {
        self.events.borrow().clone()
    }

    fn asked(&self) -> Vec<&'static str> {
        self.asked.lock().expect("lock").clone()
    }
}

impl LoginUi for ScriptedUi {
    fn show(&mut self, shown: Shown) {
        self.events.send_modify(|e| e.push(shown));
    }

    fn ask<'a>(&'a mut self, field: &'a Field) -> BoxFuture<'a, Result<String, String>> {
        self.asked.lock().expect("lock").push(field.name);
        let mut answers = self.answers.lock().expect("lock");
        let next = answers
            .iter()
            .position(|(k, _)| *k == field.name)
            .map(|i| answers.remove(i).1);
        async move { next.ok_or_else(|| "nobody types that here".to_string()) }.boxed()
    }
}

/// A fake Feishu, a fake accounts host that hands out the pair the fake Feishu accepts (with
/// the scanner's open_id [`OWNER`]), and the configuration naming the fake Feishu.
struct Bed {
    fake: FakeFeishu,
    reg: FakeRegistration,
    config: Config,
    _dir: tempfile::TempDir,
}

impl Bed {
    async fn new() -> Bed {
        Self::scanned_by(OWNER).await
    }

    /// A bed whose accounts host reports `open_id` as the scanner.
    async fn scanned_by(open_id: &str) -> Bed {
        Self::with(RegistrationConfig {
            open_id: Some(open_id.into()),
            ..RegistrationConfig::default()
        })
        .await
    }

    /// A bed whose accounts host has `config`, handing out the fake Feishu's pair.
    async fn with(config: RegistrationConfig) -> Bed {
        let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
        let reg = FakeRegistration::start(RegistrationConfig {
            client_id: fake.config().app_id.clone(),
            client_secret: fake.config().app_secret.clone(),
            min_interval: Duration::ZERO,
            ..config
        })
        .await
        .expect("registration fake");
        let dir = tempfile::tempdir().expect("tempdir");
        let config = write_config(dir.path(), &fake, "senders = \"owner\"\n");
        Bed {
            fake,
            reg,
            config,
            _dir: dir,
        }
    }

    fn args(&self) -> LoginArgs {
        LoginArgs {
            poll: Some(Duration::from_millis(20)),
            ..LoginArgs::default()
        }
        .with_flag("accounts", self.reg.base_url())
    }

    async fn login(&self, args: &LoginArgs, ui: &ScriptedUi) -> Result<String, String> {
        let mut ui = ui.clone();
        let run = scv_bridge::login::run_with(Channel::Feishu, &self.config, "work", args, &mut ui);
        tokio::time::timeout(WAIT, run)
            .await
            .expect("the login ends")
    }

    fn stored(&self, field: &str) -> Option<String> {
        let store = CredentialStore::Files(self.config.state_dir.join("credentials"));
        let c = store.load(ACCOUNT).expect("load")?;
        c.get(field).map(|v| v.expose().to_string())
    }
}

#[tokio::test]
async fn an_empty_app_id_creates_the_app_by_scanning_and_stores_it() {
    let bed = Bed::new().await;
    let ui = ScriptedUi::answering(&[("app_id", "")]);
    let args = bed.args();
    let phone = {
        let (ui, reg_url) = (ui.clone(), bed.reg.base_url().to_string());
        async move {
            let url = ui.wait_qr(1).await;
            assert!(url.starts_with(&reg_url), "{url}");
            url
        }
    };
    let (line, url) = tokio::join!(bed.login(&args, &ui), async {
        let url = phone.await;
        bed.reg.scan(&url).await.expect("scan");
        url
    });
    let line = line.expect("login succeeds");
    assert!(line.contains("logged in: feishu:work"), "{line}");
    assert!(line.contains("ou_bot"), "{line}");
    assert!(line.contains("send this code"), "pairing as today: {line}");
    assert_eq!(ui.asked(), ["app_id"], "no secret asked when scanning");

    let creds = bed.fake.credentials();
    assert_eq!(bed.stored("app_id"), Some(creds.app_id.clone()));
    assert_eq!(
        bed.stored("app_secret").as_deref(),
        Some(creds.app_secret.expose())
    );
    assert!(bed.stored("pairing_code").is_some());
    assert!(bed.fake.token_requests() >= 1, "the pair was verified");

    let shown = ui.shown();
    let qrs: Vec<_> = shown
        .iter()
        .filter(|s| matches!(s, Shown::Qr { .. }))
        .collect();
    assert_eq!(
        qrs,
        [&Shown::Qr {
            app: "Feishu",
            url: url.clone(),
            number: 1,
            of: 3
        }]
    );
    let q = bed.reg.scanned_query().expect("scanned");
    assert_eq!(q.get("createOnly").map(String::as_str), Some("true"));
    assert_eq!(q.get("source").map(String::as_str), Some("scv-bridge"));
    let everything = format!("{shown:?} {line}");
    assert!(
        !everything.contains(creds.app_secret.expose()) && !everything.contains("dc-secret"),
        "neither the secret nor the device code is shown: {everything}"
    );
}

#[tokio::test]
async fn an_expired_code_is_reissued() {
    let bed = Bed::new().await;
    let ui = ScriptedUi::answering(&[("app_id", "")]);
    let args = bed.args();
    let phone = async {
        ui.wait_qr(1).await;
        bed.reg.set_fault(Some(PollFault::Expired));
        let url = ui.wait_qr(2).await;
        bed.reg.set_fault(None);
        bed.reg.scan(&url).await.expect("scan");
    };
    let (line, ()) = tokio::join!(bed.login(&args, &ui), phone);
    line.expect("login succeeds with the second code");
    assert!(ui.shown().contains(&Shown::Line("the code expired".into())));
    assert_eq!(bed.reg.begins().len(), 2);
    assert!(bed.stored("app_secret").is_some());
}

#[tokio::test]
async fn a_cancelled_scan_stores_nothing_and_says_what_to_run() {
    let bed = Bed::new().await;
    let ui = ScriptedUi::answering(&[("app_id", "")]);
    let args = bed.args();
    let phone = async {
        ui.wait_qr(1).await;
        bed.reg.set_fault(Some(PollFault::Denied));
    };
    let (e, ()) = tokio::join!(bed.login(&args, &ui), phone);
    let e = e.expect_err("cancelled");
    assert!(e.contains("cancelled"), "{e}");
    assert!(e.contains("login feishu work`"), "{e}");
    assert_eq!(bed.stored("app_id"), None);
}

#[tokio::test]
async fn a_host_without_client_secret_points_to_the_typed_login() {
    let fake = FakeFeishu::start(FakeConfig::fast()).await.expect("fake");
    let reg = FakeRegistration::start(RegistrationConfig {
        auth_methods: vec![],
        ..RegistrationConfig::default()
    })
    .await
    .expect("registration fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path(), &fake, "");
    let args = LoginArgs::default().with_flag("accounts", reg.base_url());
    let mut ui = ScriptedUi::answering(&[("app_id", "")]);
    let e = scv_bridge::login::run_with(Channel::Feishu, &config, "work", &args, &mut ui)
        .await
        .expect_err("unsupported");
    assert!(e.contains("--app-id cli_"), "{e}");
    assert!(reg.begins().is_empty());
}

#[tokio::test]
async fn a_typed_app_id_still_asks_the_secret_and_never_scans() {
    let bed = Bed::new().await;
    let creds = bed.fake.credentials();
    let ui = ScriptedUi::answering(&[("app_secret", creds.app_secret.expose())]);
    let args = bed.args().with_flag("app-id", creds.app_id.clone());
    let line = bed.login(&args, &ui).await.expect("typed login");
    assert!(line.contains("logged in: feishu:work"), "{line}");
    assert_eq!(ui.asked(), ["app_secret"]);
    assert!(bed.reg.begins().is_empty(), "no scan");
    assert!(!ui.shown().iter().any(|s| matches!(s, Shown::Qr { .. })));
    assert_eq!(bed.stored("app_id"), Some(creds.app_id));

    // An empty secret is refused with the fix.
    let ui = ScriptedUi::answering(&[("app_secret", " ")]);
    let args = bed.args().with_flag("app-id", "cli_x");
    let e = bed.login(&args, &ui).await.expect_err("empty secret");
    assert!(e.contains("developer console"), "{e}");
}

/// Logs in by scanning on `bed` (no daemon running); returns what the login said.
async fn scanned_login(bed: &Bed) -> String {
    let ui = ScriptedUi::answering(&[("app_id", "")]);
    let args = bed.args();
    let phone = async {
        let url = ui.wait_qr(1).await;
        bed.reg.scan(&url).await.expect("scan");
    };
    let (line, ()) = tokio::join!(bed.login(&args, &ui), phone);
    line.expect("login succeeds")
}

#[tokio::test]
async fn the_scanner_becomes_the_owner_with_their_first_private_message() {
    let bed = Bed::new().await;
    let line = scanned_login(&bed).await;
    assert!(line.contains("first private message"), "{line}");
    assert_eq!(bed.stored("pending_owner").as_deref(), Some(OWNER));
    let Bed {
        fake, config, _dir, ..
    } = bed;
    let h = Harness::start_with(fake, _dir, config, None, TestAgent::echo(), None).await;
    h.wait_state(ComponentState::Connected).await;
    assert_eq!(h.health().user_id, None);

    // The candidate in a group, and someone else in private: neither binds.
    h.fake.push_group_text("oc_team", OWNER, "hi all", true);
    h.fake.push_p2p_text("ou_other", "me?");
    h.until("both ACKs", |f| f.acks().len() == 2 && f.in_flight() == 0)
        .await;
    h.settle().await;
    assert_eq!(h.health().user_id, None);

    // The candidate's first private message binds them, no code.
    h.fake.push_p2p_text(OWNER, "hello");
    h.until_health("the owner", |c| c.user_id.as_deref() == Some(OWNER))
        .await;
    h.until("the announcement", |f| !f.sent().is_empty()).await;
    let stored = h.credentials.load(ACCOUNT).expect("load").expect("stored");
    let get = |f: &str| stored.get(f).map(|v| v.expose().to_string());
    assert_eq!(get("owner_id").as_deref(), Some(OWNER));
    assert_eq!(get("pending_owner"), None);
    assert_eq!(get("pairing_code"), None, "the code is closed too");
    assert!(get("app_secret").is_some());
    h.stop().await;
}

#[tokio::test]
async fn a_scanner_id_equal_to_the_bot_is_no_candidate() {
    let bed = Bed::scanned_by("ou_bot").await;
    let line = scanned_login(&bed).await;
    assert!(!line.contains("first private message"), "{line}");
    assert_eq!(bed.stored("pending_owner"), None);
    assert!(bed.stored("pairing_code").is_some(), "the code as today");
}

#[tokio::test]
async fn a_lark_tenant_is_polled_on_the_lark_host_and_stored() {
    let bed = Bed::with(RegistrationConfig {
        open_id: Some(OWNER.into()),
        lark: true,
        ..RegistrationConfig::default()
    })
    .await;
    scanned_login(&bed).await;
    let hosts: Vec<&str> = bed.reg.polls().iter().map(|p| p.host).collect();
    assert_eq!(hosts.last(), Some(&"lark"), "{hosts:?}");
    assert_eq!(hosts.iter().filter(|h| **h == "lark").count(), 1);
    assert_eq!(bed.reg.begins_on_lark(), 0);
    let creds = bed.fake.credentials();
    assert_eq!(
        bed.stored("app_secret").as_deref(),
        Some(creds.app_secret.expose())
    );
}

#[tokio::test]
async fn the_table_s_accounts_url_is_used_unless_the_flag_names_another() {
    let mut bed = Bed::new().await;
    // The table names a host nobody serves; the flag names the fake, and wins.
    let dead = "accounts_url = \"http://127.0.0.1:9\"\n";
    bed.config = write_config(bed._dir.path(), &bed.fake, dead);
    scanned_login(&bed).await;
    assert_eq!(bed.reg.begins().len(), 1, "the flag's host was asked");

    // No flag: the table's host is asked.
    let table = format!("accounts_url = \"{}\"\n", bed.reg.base_url());
    bed.config = write_config(bed._dir.path(), &bed.fake, &table);
    let ui = ScriptedUi::answering(&[("app_id", "")]);
    let args = LoginArgs {
        poll: Some(Duration::from_millis(20)),
        ..LoginArgs::default()
    };
    let phone = async {
        let url = ui.wait_qr(1).await;
        bed.reg.scan(&url).await.expect("scan");
    };
    let (line, ()) = tokio::join!(bed.login(&args, &ui), phone);
    line.expect("login succeeds on the table's host");
    assert_eq!(bed.reg.begins().len(), 2, "the table's host was asked");
}
