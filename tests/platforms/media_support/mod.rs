//! Shared harness of the media end-to-end tests: the fake iLink server with its CDN, a daemon
//! with the real WeChat adapter and a workspace, and the agent a test chooses (the fake model
//! behind the real `openai` backend, the fake SCV server behind the real `scv` backend, or a
//! scripted one), all over real sockets.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use scv_bridge::adapters::PlatformParts;
use scv_bridge::adapters::wechat::Tuning;
use scv_bridge::agent::{Agent, AgentError, SessionKey, TurnOutput, TurnRequest};
use scv_bridge::config::{AgentConfig, Config};
use scv_bridge::conversation::Conversation;
use scv_bridge::daemon::{self, RunningDaemon};
use scv_bridge::secrets::{CredentialStore, Credentials};
use scv_bridge::store::Store;
use scv_bridge::supervisor::{ComponentFactory, LifecyclePolicy};
use scv_bridge::testing::WechatFactory;
use scv_wechat::cdn::MediaKey;
use scv_wechat::fake::{FakeHandle, FakeServer};
use scv_wechat::media::{CdnMedia, FileItem, VoiceItem};
use scv_wechat::message::MessageItem;
use tokio_util::sync::CancellationToken;

/// The owner's WeChat id.
pub const OWNER: &str = "owner0001@im.wechat";
/// The account every test runs.
pub const ID: &str = "wechat:phone";
/// How long any wait may take before the test fails instead of hanging.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// Builds the agent once the daemon's store exists.
pub type MakeAgent = Arc<dyn Fn(&Store) -> Arc<dyn Agent> + Send + Sync>;

/// Answers with a fixed text (and `files`), recording every request it gets.
#[derive(Default)]
pub struct ScriptedAgent {
    pub answer: Mutex<String>,
    pub files: Mutex<Vec<PathBuf>>,
    pub prompts: Mutex<Vec<String>>,
    pub attachments: Mutex<Vec<Vec<PathBuf>>>,
}

impl Agent for ScriptedAgent {
    fn turn(
        &self,
        req: TurnRequest,
        _cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutput, AgentError>> {
        self.prompts.lock().expect("lock").push(req.prompt.clone());
        self.attachments
            .lock()
            .expect("lock")
            .push(req.attachments.iter().map(|a| a.path.clone()).collect());
        let text = self.answer.lock().expect("lock").clone();
        let files = self.files.lock().expect("lock").clone();
        Box::pin(async move {
            Ok(TurnOutput {
                text,
                usage: None,
                files,
                ..Default::default()
            })
        })
    }

    fn reset<'a>(&'a self, _session: &'a SessionKey) -> BoxFuture<'a, Result<(), AgentError>> {
        Box::pin(async { Ok(()) })
    }
}

/// A fake, a workspace, a config and (once started) a daemon.
pub struct Bed {
    pub dir: tempfile::TempDir,
    pub fake: FakeServer,
    pub config_path: PathBuf,
    pub conversation: Arc<Mutex<Option<Arc<Conversation>>>>,
    pub daemon: Option<RunningDaemon>,
}

impl Bed {
    /// A fake and a config whose `[wechat.phone]` has a workspace, the fake's CDN, `account`
    /// lines; `extra` lines go before it (e.g. a `[media]` table).
    pub async fn new(extra: &str, account: &str) -> Bed {
        let fake = FakeServer::start().await.expect("fake");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws")).expect("workspace");
        let config_path = dir.path().join("config.toml");
        let text = format!(
            "state_dir = \"{}\"\nsocket = \"{}\"\ncredentials = \"file\"\n{extra}\n\
             [wechat.phone]\nbase_url = \"{}\"\ncdn_base_url = \"{}\"\nworkspace = \"{}\"\n{account}\n",
            dir.path().join("state").display(),
            dir.path().join("run/daemon.sock").display(),
            fake.base_url(),
            fake.handle().cdn_base_url(),
            dir.path().join("ws").display(),
        );
        std::fs::write(&config_path, text).expect("write config");
        let creds = Credentials::default()
            .with(
                "bot_token",
                fake.handle().bot_token().expect("token").expose(),
            )
            .with("bot_id", fake.handle().bot_id())
            .with("base_url", fake.base_url())
            .with("owner_id", OWNER);
        CredentialStore::Files(dir.path().join("state").join("credentials"))
            .save(ID, &creds)
            .expect("save login");
        Bed {
            dir,
            fake,
            config_path,
            conversation: Arc::new(Mutex::new(None)),
            daemon: None,
        }
    }

    /// The fake's handle.
    pub fn h(&self) -> FakeHandle {
        self.fake.handle()
    }

    /// The account's workspace (canonical).
    pub fn workspace(&self) -> PathBuf {
        self.dir
            .path()
            .join("ws")
            .canonicalize()
            .expect("workspace")
    }

    /// Starts the daemon with the agent `make` builds.
    pub async fn start(&mut self, make: MakeAgent) {
        let slot = self.conversation.clone();
        // The pipeline is the daemon's too, so status shows its agent and speech rows and a
        // `[speech]` table reaches it.
        let build = move |creds: &CredentialStore, store: &Store, _: &_| {
            let conversation = Conversation::new(store.clone(), make(store));
            if let Ok(mut s) = slot.lock() {
                *s = Some(conversation.clone());
            }
            let ctx = PlatformParts {
                credentials: creds.clone(),
                store: store.clone(),
                conversation: conversation.clone(),
                agent: AgentConfig::default(),
                mail: Default::default(),
            };
            let tuning = Tuning {
                min_send_interval: Duration::from_millis(20),
                slow_down_base: Duration::from_millis(300),
                ..Tuning::default()
            };
            let f: Arc<dyn ComponentFactory> = Arc::new(WechatFactory { parts: ctx, tuning });
            daemon::Wiring {
                factory: f,
                conversation: Some(conversation),
                confirm: None,
            }
        };
        let config = Config::load(&self.config_path).expect("config");
        let d = daemon::start_with(config, build, LifecyclePolicy::default())
            .await
            .expect("daemon starts");
        self.daemon = Some(d);
    }

    /// Stops the daemon (what a crash leaves is what the store holds: journaled work resumes).
    pub async fn stop(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.stop().await;
        }
    }

    /// Waits until the pipeline is quiet.
    pub async fn settle(&self) {
        let conv = self
            .conversation
            .lock()
            .expect("lock")
            .clone()
            .expect("started");
        within(conv.quiescent(), "the pipeline to go quiet").await;
    }

    /// Waits until the fake accepted `n` sends; returns their texts.
    pub async fn wait_sent(&self, n: usize) -> Vec<String> {
        let sent = self.h().wait_for_sent(n, PATIENCE).await;
        assert!(sent.len() >= n, "expected {n} sends, got {:?}", sent);
        sent.into_iter().map(|m| m.text).collect()
    }

    /// Every file below the workspace's inbox, relative to the workspace.
    pub fn inbox_files(&self) -> Vec<String> {
        let ws = self.workspace();
        let mut out = Vec::new();
        let mut stack = vec![ws.join("inbox")];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p.strip_prefix(&ws).expect("inside").display().to_string());
                }
            }
        }
        out.sort();
        out
    }
}

/// Runs `fut`, failing the test if it takes longer than [`PATIENCE`].
pub async fn within<T>(fut: impl std::future::Future<Output = T>, what: &str) -> T {
    match tokio::time::timeout(PATIENCE, fut).await {
        Ok(v) => v,
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// An image item whose bytes sit on the fake CDN (shared with the benches).
pub use scv_bridge::testing::wechat::image_item;

/// A file item (key in form B, as files carry it) with its declared length.
pub fn file_item(
    h: &FakeHandle,
    name: &str,
    bytes: &[u8],
    declared_len: Option<String>,
) -> MessageItem {
    let key = MediaKey::random();
    let param = h.cdn_put(bytes, Some(&key));
    file_item_raw(
        param,
        key.base64_of_hex(),
        name,
        declared_len.or(Some(bytes.len().to_string())),
    )
}

/// A file item from its parts (for damaged media).
pub fn file_item_raw(
    param: String,
    aes_key: String,
    name: &str,
    len: Option<String>,
) -> MessageItem {
    MessageItem {
        item_type: Some(4),
        file_item: Some(FileItem {
            media: Some(CdnMedia {
                encrypt_query_param: Some(param),
                aes_key: Some(aes_key),
                encrypt_type: Some(1),
                full_url: None,
            }),
            file_name: Some(name.to_string()),
            len,
            md5: None,
        }),
        ..MessageItem::default()
    }
}

/// A voice note with the platform's transcript.
pub fn voice_item(text: &str) -> MessageItem {
    MessageItem {
        item_type: Some(3),
        voice_item: Some(VoiceItem {
            text: Some(text.to_string()),
            encode_type: Some(6),
            ..VoiceItem::default()
        }),
        ..MessageItem::default()
    }
}
