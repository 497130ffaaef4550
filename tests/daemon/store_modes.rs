//! `state.db` holds message text: it and its WAL/SHM are created 0600 whatever the umask, and a
//! database left 0644 by an older version is tightened when opened.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use scv_bridge::store::Store;

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("exists").permissions().mode() & 0o777
}

fn companions(db: &Path) -> [std::path::PathBuf; 2] {
    ["-wal", "-shm"].map(|s| {
        let mut n = db.as_os_str().to_owned();
        n.push(s);
        n.into()
    })
}

/// The umask most systems run with; without it a 0077 umask would hide a 0644 creation.
/// Process-wide: the other tests of this binary then create files under it too, and none of them
/// depends on the umask (both tests here set the same value, so their order does not matter).
fn usual_umask() {
    // SAFETY: umask only changes this process's file-creation mask; it cannot fail.
    unsafe { libc::umask(0o022) };
}

#[tokio::test]
async fn state_db_and_its_wal_and_shm_are_created_owner_only() {
    usual_umask();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    let (store, guard) = Store::open(&db).expect("open");
    store
        .set_state("wechat:a", "cursor", "c1")
        .await
        .expect("write");
    assert_eq!(mode(&db), 0o600, "state.db");
    for f in companions(&db) {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
    guard.close();
}

#[tokio::test]
async fn a_database_left_world_readable_is_tightened_on_open() {
    usual_umask();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("state.db");
    {
        let (store, guard) = Store::open(&db).expect("open");
        store
            .set_state("wechat:a", "cursor", "c1")
            .await
            .expect("write");
        // Keep the WAL: a kill -9 leaves it beside the database.
        std::mem::forget(guard);
        for f in std::iter::once(db.clone()).chain(companions(&db)) {
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("loosen");
        }
    }
    let (store, guard) = Store::open(&db).expect("reopen");
    assert_eq!(
        store
            .get_state("wechat:a", "cursor")
            .await
            .expect("read")
            .as_deref(),
        Some("c1")
    );
    for f in std::iter::once(db.clone()).chain(companions(&db)) {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
    guard.close();
}
