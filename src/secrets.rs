//! Credentials: the OS keyring where one works, else 0600 files in a 0700 directory.
//!
//! An account's credentials are one JSON object of named fields, written atomically, so a
//! second login replaces the first as a whole and a reader never sees half of each.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use digest::fingerprint;

mod same_bot;
pub use same_bot::{BotIdentity, SharedBot, shared_bots};

use crate::config::CredentialsMode;

/// The keyring service name every entry is stored under.
const SERVICE: &str = "scv-bridge";

/// The store entry `scv-bridge login agent` writes: the model API key, beside the accounts' entries.
pub const AGENT_KEY_ID: &str = "agent:openai";

/// The store entry of the named agent `name`'s key (`[agents.NAME]`), written by the console's
/// agent form, read where the named agents are built. Stable: the entry's id; it never equals
/// [`AGENT_KEY_ID`] or an account's id (no platform is called `agents`), whatever the name.
pub fn named_agent_key_id(name: &str) -> String {
    format!("agents:{name}")
}

/// The field of [`AGENT_KEY_ID`] (and of a named agent's entry) holding the key.
pub const API_KEY_FIELD: &str = "api_key";

/// The field of an account's stored login naming its owner (the one person it answers), for
/// every platform with an owner: written by a login that learns the owner (WeChat's scan) or by
/// pairing, read by the port, the confirm questions and the mail chat.
pub const OWNER_FIELD: &str = "owner_id";

pub use crate::secret::Secret;

/// One account's credentials: named fields (e.g. `bot_token`, `owner_id`), all treated as secret.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    fields: BTreeMap<String, Secret>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.fields.keys().map(|k| (k, "[redacted]")))
            .finish()
    }
}

impl Credentials {
    /// Sets one field.
    pub fn with(mut self, name: &str, value: impl Into<String>) -> Self {
        self.fields.insert(name.to_string(), Secret::new(value));
        self
    }

    /// One field, if present.
    pub fn get(&self, name: &str) -> Option<&Secret> {
        self.fields.get(name)
    }

    /// The owner this login names ([`OWNER_FIELD`]), if any.
    pub fn owner(&self) -> Option<String> {
        self.get(OWNER_FIELD)
            .map(|o| o.expose().trim().to_string())
            .filter(|o| !o.is_empty())
    }

    /// Whether no field is stored.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// A short digest that changes whenever any field changes; safe to log and compare.
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.to_json())
    }

    fn to_json(&self) -> String {
        let map: BTreeMap<&str, &str> = self
            .fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.expose()))
            .collect();
        serde_json::to_string(&map).unwrap_or_default()
    }

    fn from_json(s: &str) -> Result<Self, SecretsError> {
        let map: BTreeMap<String, String> =
            serde_json::from_str(s).map_err(|_| SecretsError::Corrupt)?;
        Ok(Credentials {
            fields: map.into_iter().map(|(k, v)| (k, Secret::new(v))).collect(),
        })
    }
}

/// Why credentials could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    /// The OS keyring refused or is absent.
    #[error("keyring: {0}; set credentials = \"file\" to keep them in 0600 files instead")]
    Keyring(String),
    /// A credentials file could not be read or written.
    #[error("credentials file {path}: {source}")]
    File {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A stored entry is not what this program writes.
    #[error(
        "stored credentials are corrupt; run the account's `{login}` again",
        login = crate::config::command("login CHANNEL ACCOUNT")
    )]
    Corrupt,
}

/// Where credentials live, chosen once at start.
#[derive(Debug, Clone)]
pub enum CredentialStore {
    /// The OS keyring (Secret Service, Keychain, Credential Manager).
    Keyring,
    /// 0600 files under this 0700 directory.
    Files(PathBuf),
}

impl CredentialStore {
    /// Chooses the store for `mode`; `auto` falls back to files (with one info line) where no
    /// keyring works. The daemon opens its store once, so the line is once per start.
    pub fn open(mode: CredentialsMode, state_dir: &Path) -> Result<CredentialStore, SecretsError> {
        let store = CredentialStore::open_quietly(mode, state_dir)?;
        if let (CredentialsMode::Auto, CredentialStore::Files(dir)) = (mode, &store) {
            tracing::info!(
                "no Secret Service on D-Bus (no OS keyring works here); secrets go to 0600 files in {}",
                dir.display()
            );
        }
        Ok(store)
    }

    /// [`CredentialStore::open`] without the fallback line: for command-line calls (login, doctor,
    /// init), which would otherwise repeat it on every run.
    pub fn open_quietly(
        mode: CredentialsMode,
        state_dir: &Path,
    ) -> Result<CredentialStore, SecretsError> {
        let files = CredentialStore::Files(state_dir.join("credentials"));
        match mode {
            CredentialsMode::File => Ok(files),
            CredentialsMode::Keyring => {
                keyring_probe()?;
                Ok(CredentialStore::Keyring)
            }
            CredentialsMode::Auto => match keyring_probe() {
                Ok(()) => Ok(CredentialStore::Keyring),
                Err(e) => {
                    tracing::debug!(reason = %e, "the OS keyring probe failed");
                    Ok(files)
                }
            },
        }
    }

    /// The credentials of `account` (`<channel>:<account>`), or `None` when there are none.
    pub fn load(&self, account: &str) -> Result<Option<Credentials>, SecretsError> {
        match self {
            CredentialStore::Keyring => {
                let entry = keyring_entry(account)?;
                match entry.get_password() {
                    Ok(s) => Credentials::from_json(&s).map(Some),
                    Err(keyring::Error::NoEntry) => Ok(None),
                    Err(e) => Err(SecretsError::Keyring(e.to_string())),
                }
            }
            CredentialStore::Files(dir) => {
                let path = file_for(dir, account);
                match std::fs::read_to_string(&path) {
                    Ok(s) => Credentials::from_json(&s).map(Some),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(source) => Err(SecretsError::File { path, source }),
                }
            }
        }
    }

    /// Replaces the credentials of `account` as a whole.
    pub fn save(&self, account: &str, creds: &Credentials) -> Result<(), SecretsError> {
        match self {
            CredentialStore::Keyring => keyring_entry(account)?
                .set_password(&creds.to_json())
                .map_err(|e| SecretsError::Keyring(e.to_string())),
            CredentialStore::Files(dir) => {
                write_private(dir, &file_for(dir, account), &creds.to_json())
            }
        }
    }

    /// The model API key `scv-bridge login agent` stored, if any.
    pub fn agent_key(&self) -> Result<Option<Secret>, SecretsError> {
        Ok(self
            .load(AGENT_KEY_ID)?
            .and_then(|c| c.get(API_KEY_FIELD).cloned())
            .filter(|k| !k.expose().is_empty()))
    }

    /// The key stored for the named agent `name`, if any (never `[agent]`'s).
    pub fn named_agent_key(&self, name: &str) -> Result<Option<Secret>, SecretsError> {
        Ok(self
            .load(&named_agent_key_id(name))?
            .and_then(|c| c.get(API_KEY_FIELD).cloned())
            .filter(|k| !k.expose().is_empty()))
    }

    /// Removes the credentials of `account`; absent credentials are not an error.
    pub fn delete(&self, account: &str) -> Result<(), SecretsError> {
        match self {
            CredentialStore::Keyring => match keyring_entry(account)?.delete_credential() {
                Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                Err(e) => Err(SecretsError::Keyring(e.to_string())),
            },
            CredentialStore::Files(dir) => {
                let path = file_for(dir, account);
                match std::fs::remove_file(&path) {
                    Ok(()) => Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    Err(source) => Err(SecretsError::File { path, source }),
                }
            }
        }
    }
}

fn keyring_entry(account: &str) -> Result<keyring::Entry, SecretsError> {
    keyring::Entry::new(SERVICE, account).map_err(|e| SecretsError::Keyring(e.to_string()))
}

/// Writes, reads back and deletes a probe entry: a keyring that cannot do all three does not work.
fn keyring_probe() -> Result<(), SecretsError> {
    // A headless server's service has no session bus: the probe would start the whole D-Bus
    // client (its threads and code, resident for the daemon's life) only to fail.
    #[cfg(target_os = "linux")]
    if no_session_bus(
        std::env::var_os("DBUS_SESSION_BUS_ADDRESS"),
        std::env::var_os("XDG_RUNTIME_DIR"),
    ) {
        return Err(SecretsError::Keyring(
            "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus \
             does not exist)"
                .into(),
        ));
    }
    let entry = keyring_entry("probe:probe")?;
    let err = |e: keyring::Error| SecretsError::Keyring(e.to_string());
    entry.set_password("probe").map_err(err)?;
    let back = entry.get_password().map_err(err)?;
    let _ = entry.delete_credential();
    if back == "probe" {
        Ok(())
    } else {
        Err(SecretsError::Keyring(
            "the keyring returned a different value".into(),
        ))
    }
}

/// Whether no D-Bus session bus can be found where D-Bus clients look for it: the address in
/// `DBUS_SESSION_BUS_ADDRESS`, else the socket `$XDG_RUNTIME_DIR/bus`. The Secret Service lives
/// on that bus, so without it no Linux keyring works.
#[cfg(target_os = "linux")]
fn no_session_bus(
    address: Option<std::ffi::OsString>,
    runtime_dir: Option<std::ffi::OsString>,
) -> bool {
    let addressed = address.is_some_and(|a| !a.is_empty());
    let socket = runtime_dir.is_some_and(|d| Path::new(&d).join("bus").exists());
    !addressed && !socket
}

/// `wechat:phone` is stored as `wechat-phone.json`; account names are restricted to safe characters.
fn file_for(dir: &Path, account: &str) -> PathBuf {
    let safe: String = account
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    dir.join(format!("{safe}.json"))
}

/// Creates `dir` 0700 (tightening it if it exists) and atomically writes `path` 0600.
fn write_private(dir: &Path, path: &Path, contents: &str) -> Result<(), SecretsError> {
    let io = |source| SecretsError::File {
        path: path.to_path_buf(),
        source,
    };
    // The state directory too, when this is the first write under it (`init`, `login`): the
    // daemon and `doctor` want it private, and the socket may live there.
    if let Some(state) = dir.parent()
        && !state.as_os_str().is_empty()
        && !state.exists()
    {
        std::fs::create_dir_all(state).map_err(io)?;
        std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    }
    std::fs::create_dir_all(dir).map_err(io)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(io)?;
    write_atomic_private(path, contents).map_err(io)
}

/// Writes `path` whole or not at all, readable by its owner only: a 0600 temporary file beside
/// it, synced, then renamed over it (the rename keeps the new file's mode even where an older
/// file was looser). The caller sees to the directory.
pub(crate) fn write_atomic_private(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(contents.as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}

/// A small dependency-free digest for fingerprints (FNV-1a, 64 bit): not for security, only change detection.
mod digest {
    /// Hex of the FNV-1a hash of `s`.
    pub fn fingerprint(s: &str) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in s.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_session_bus_is_found_by_its_address_or_its_socket() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().to_path_buf();
        let runtime = Some(dir.clone().into_os_string());
        assert!(no_session_bus(None, None));
        assert!(
            no_session_bus(Some("".into()), runtime.clone()),
            "no bus socket yet"
        );
        assert!(!no_session_bus(Some("unix:path=/x".into()), None));
        std::fs::write(dir.join("bus"), b"").expect("the socket's place");
        assert!(!no_session_bus(None, runtime));
    }

    #[test]
    fn secrets_never_print() {
        let c = Credentials::default()
            .with("bot_token", "tok-123")
            .with("owner_id", "o1");
        let shown = format!("{c:?} {:?} {}", c.get("bot_token"), Secret::new("pw"));
        assert!(
            !shown.contains("tok-123") && !shown.contains("pw\"") && !shown.contains("o1\""),
            "{shown}"
        );
        assert!(shown.contains("[redacted]"));
    }

    #[test]
    fn file_store_is_private_atomic_and_replaceable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CredentialStore::open(CredentialsMode::File, dir.path()).expect("open");
        assert_eq!(store.load("wechat:phone").expect("load"), None);
        let first = Credentials::default().with("bot_token", "a");
        store.save("wechat:phone", &first).expect("save");
        let second = Credentials::default()
            .with("bot_token", "b")
            .with("owner_id", "o");
        store.save("wechat:phone", &second).expect("replace");
        assert_eq!(
            store.load("wechat:phone").expect("load"),
            Some(second.clone())
        );
        assert_ne!(first.fingerprint(), second.fingerprint());
        let cred_dir = dir.path().join("credentials");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&cred_dir), 0o700);
        // A state directory the first login makes is private too (doctor fails a 0755 one).
        let fresh = dir.path().join("new/state");
        let store2 = CredentialStore::open(CredentialsMode::File, &fresh).expect("open");
        store2.save("wechat:phone", &first).expect("save");
        assert_eq!(mode(&fresh), 0o700);
        assert_eq!(mode(&cred_dir.join("wechat-phone.json")), 0o600);
        let leftovers = std::fs::read_dir(&cred_dir).expect("list").count();
        assert_eq!(leftovers, 1, "no temporary files left behind");
        store.delete("wechat:phone").expect("delete");
        store
            .delete("wechat:phone")
            .expect("deleting twice is fine");
        assert_eq!(store.load("wechat:phone").expect("load"), None);
    }

    #[test]
    fn the_agent_key_has_its_own_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CredentialStore::Files(dir.path().to_path_buf());
        assert_eq!(store.agent_key().expect("load"), None);
        let creds = Credentials::default().with(API_KEY_FIELD, "sk-1");
        store.save(AGENT_KEY_ID, &creds).expect("save");
        assert_eq!(store.agent_key().expect("load"), Some(Secret::new("sk-1")));
        assert!(dir.path().join("agent-openai.json").exists());
    }

    #[test]
    fn a_named_agent_s_key_is_its_own_even_when_it_is_called_openai() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CredentialStore::Files(dir.path().to_path_buf());
        let key = |k: &str| Credentials::default().with(API_KEY_FIELD, k);
        store.save(AGENT_KEY_ID, &key("sk-default")).expect("save");
        assert_eq!(store.named_agent_key("openai").expect("load"), None);
        let id = named_agent_key_id("openai");
        store.save(&id, &key("sk-named")).expect("save");
        assert_eq!(
            store.named_agent_key("openai").expect("load"),
            Some(Secret::new("sk-named"))
        );
        assert_eq!(
            store.agent_key().expect("load"),
            Some(Secret::new("sk-default"))
        );
    }

    #[test]
    fn corrupt_file_is_reported_not_panicked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CredentialStore::Files(dir.path().to_path_buf());
        std::fs::write(dir.path().join("mail-x.json"), "{not json").expect("write");
        assert!(matches!(store.load("mail:x"), Err(SecretsError::Corrupt)));
    }

    #[test]
    fn auto_works_on_a_headless_machine() {
        // No session bus here (CI, servers): auto must still give a working store.
        let dir = tempfile::tempdir().expect("tempdir");
        let store = CredentialStore::open(CredentialsMode::Auto, dir.path()).expect("auto opens");
        store
            .save("feishu:w", &Credentials::default().with("app_secret", "s"))
            .expect("save");
        assert!(store.load("feishu:w").expect("load").is_some());
        store.delete("feishu:w").expect("delete");
    }
}
