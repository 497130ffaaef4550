//! Store tests: commits, batching, savepoints, migrations, account removal.

use super::*;

#[tokio::test]
async fn state_round_trips_and_survives_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    {
        let (store, guard) = Store::open(&path).expect("open");
        store
            .set_state("wechat:a", "cursor", "c1")
            .await
            .expect("set");
        store
            .set_state("wechat:a", "cursor", "c2")
            .await
            .expect("overwrite");
        guard.close();
    }
    let (store, _guard) = Store::open(&path).expect("reopen");
    assert_eq!(
        store
            .get_state("wechat:a", "cursor")
            .await
            .expect("get")
            .as_deref(),
        Some("c2")
    );
    assert_eq!(
        store.get_state("wechat:b", "cursor").await.expect("get"),
        None
    );
    assert_eq!(store.integrity_check().await.expect("check"), "ok");
}

/// A message's steps read "the chat's next row" with `ORDER BY ... LIMIT 1` and new parameters
/// each time; SQLite would otherwise compile such a cached statement again at every change of
/// its parameters (the plan may depend on them), a parse and plan on every step of every message.
#[tokio::test]
async fn a_cached_statement_is_not_compiled_again_when_its_parameters_change() {
    let (store, _g) = Store::open_in_memory().expect("open");
    let mut recompiled = 0;
    for i in 0..5 {
        recompiled = store
            .call_short(move |t| {
                let mut st = t.prepare_cached(
                    "SELECT id FROM outbox WHERE account = ?1 AND chat = ?2 AND state = 'pending'
                     ORDER BY id LIMIT 1",
                )?;
                st.query_row(["wechat:a".to_string(), format!("chat{i}")], |r| {
                    r.get::<_, i64>(0)
                })
                .optional()?;
                Ok(st.get_status(rusqlite::StatementStatus::RePrepare))
            })
            .await
            .expect("read");
    }
    assert_eq!(recompiled, 0, "compiled again on a change of parameters");
}

#[tokio::test]
async fn a_failing_call_undoes_only_its_own_writes() {
    let (store, _g) = Store::open_in_memory().expect("open");
    let ok = store.set_state("a", "k", "1");
    let bad = store.call(|t| {
        t.execute("INSERT INTO account_state VALUES ('a', 'x', 'y')", [])?;
        t.execute("INSERT INTO no_such_table VALUES (1)", [])
            .map(drop)
    });
    let (ok, bad) = tokio::join!(ok, bad);
    ok.expect("the good call commits");
    assert!(bad.is_err());
    assert_eq!(
        store.get_state("a", "x").await.expect("get"),
        None,
        "the bad call's first write is undone"
    );
    assert_eq!(
        store.get_state("a", "k").await.expect("get").as_deref(),
        Some("1")
    );
}

#[tokio::test]
async fn many_concurrent_calls_all_commit() {
    let (store, _g) = Store::open_in_memory().expect("open");
    let calls = (0..2000).map(|i| {
        let s = store.clone();
        async move { s.set_state("acc", &format!("k{i}"), "v").await }
    });
    for r in futures_util::future::join_all(calls).await {
        r.expect("committed");
    }
    let n: i64 = store
        .call(|t| t.query_row("SELECT count(*) FROM account_state", [], |r| r.get(0)))
        .await
        .expect("count");
    assert_eq!(n, 2000);
}

#[tokio::test]
async fn delete_account_removes_every_row_of_that_account_only() {
    let (store, _g) = Store::open_in_memory().expect("open");
    store
        .set_state("wechat:a", "cursor", "1")
        .await
        .expect("set");
    store
        .set_state("wechat:b", "cursor", "1")
        .await
        .expect("set");
    store
        .put_settings(SettingsOverride {
            account: "wechat:a".into(),
            enabled: Some(false),
            workspace: None,
            senders: Some("anyone".into()),
            remote_tools: None,
            purpose: None,
        })
        .await
        .expect("put");
    assert_eq!(store.delete_account("wechat:a").await.expect("delete"), 2);
    assert!(store.settings_overrides().await.expect("list").is_empty());
    assert_eq!(
        store
            .get_state("wechat:b", "cursor")
            .await
            .expect("get")
            .as_deref(),
        Some("1")
    );
    let tables = store.call(|t| account_tables(t)).await.expect("tables");
    assert!(
        tables.contains(&"account_state".to_string())
            && tables.contains(&"account_settings".to_string())
    );
}

#[tokio::test]
async fn calls_after_close_fail_cleanly() {
    let (store, guard) = Store::open_in_memory().expect("open");
    guard.close();
    assert!(matches!(
        store.get_state("a", "b").await,
        Err(StoreError::Closed)
    ));
}

#[test]
fn a_newer_schema_is_refused() {
    let mut conn = Connection::open_in_memory().expect("open");
    schema::migrate(&mut conn).expect("migrate");
    conn.execute(
        "UPDATE schema_versions SET version = 999 WHERE module = 'core'",
        [],
    )
    .expect("bump");
    let err = schema::migrate(&mut conn).expect_err("refused");
    assert!(err.to_string().contains("newer than this build"));
}

#[tokio::test]
async fn a_new_store_records_every_module_with_steps_at_its_current_version() {
    let (store, _g) = Store::open_in_memory().expect("open");
    let got: Vec<(String, i64)> = store
        .call(|t| {
            let mut st =
                t.prepare("SELECT module, version FROM schema_versions ORDER BY module")?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect()
        })
        .await
        .expect("read");
    let mut want: Vec<(String, i64)> = schema_versions()
        .into_iter()
        .filter(|(_, v)| *v > 0)
        .map(|(m, v)| (m.to_string(), v as i64))
        .collect();
    want.sort();
    assert_eq!(got, want);
}

#[tokio::test]
async fn every_per_account_table_is_covered_by_logout() {
    // A table with per-account rows but no `account` column would survive `channel_logout`.
    let (store, _g) = Store::open_in_memory().expect("open");
    let missing: Vec<String> = store
        .call(|t| {
            let mut st = t.prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('schema_versions')
                 AND name NOT LIKE 'sqlite_%'
                 AND name NOT IN (SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c WHERE c.name = 'account')",
            )?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect()
        })
        .await
        .expect("query");
    assert!(
        missing.is_empty(),
        "tables without an account column: {missing:?}"
    );
}

#[tokio::test]
async fn the_wal_is_copied_back_beside_the_writer_not_in_its_commits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let (store, guard) = Store::open(&path).expect("open");
    let main_size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let before = main_size();
    // The checkpointer's writes to the main file wake the wait below (inotify), not a clock;
    // watched before the first look, so no write goes unseen.
    let (tx, mut written) = tokio::sync::watch::channel(0u64);
    let mut watcher = notify::recommended_watcher(move |e: notify::Result<notify::Event>| {
        if e.is_ok_and(|e| matches!(e.kind, notify::EventKind::Modify(_))) {
            tx.send_modify(|n| *n += 1);
        }
    })
    .expect("an inotify watcher");
    notify::Watcher::watch(&mut watcher, &path, notify::RecursiveMode::NonRecursive)
        .expect("watch the main file");
    // About 4 MiB of rows: far past the 1,000 pages at which SQLite would checkpoint by itself.
    let blob = "x".repeat(4096);
    for i in 0..1000 {
        let v = blob.clone();
        store
            .set_state("wechat:a", &format!("k{i}"), &v)
            .await
            .expect("set");
    }
    // The writer never checkpoints (its commits stay fast); the checkpointer copies the pages
    // into the main file shortly after the commits stop.
    let copied = async {
        while main_size() < before + 3 * 1024 * 1024 {
            written.changed().await.expect("the watcher lives");
        }
    };
    if tokio::time::timeout(std::time::Duration::from_secs(10), copied)
        .await
        .is_err()
    {
        panic!(
            "no checkpoint: the main file is still {} bytes",
            main_size()
        );
    }
    let autocheckpoint: i64 = store
        .call(|t| t.query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0)))
        .await
        .expect("pragma");
    assert_eq!(
        autocheckpoint, 0,
        "the writer must not checkpoint in its commits"
    );
    let kept: i64 = store
        .call(|t| t.query_row("PRAGMA journal_size_limit", [], |r| r.get(0)))
        .await
        .expect("pragma");
    assert_eq!(
        kept,
        checkpoint::WAL_KEPT_BYTES,
        "a restarted log's file is bounded"
    );
    guard.close();
    // A clean close leaves no WAL behind.
    let wal = dir.path().join("state.db-wal");
    assert!(
        std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) == 0,
        "the WAL outlived a clean close"
    );
    let (store, _g) = Store::open(&path).expect("reopen");
    assert_eq!(
        store
            .get_state("wechat:a", "k999")
            .await
            .expect("get")
            .map(|v| v.len()),
        Some(4096)
    );
}

#[tokio::test]
async fn an_urgent_call_commits_ahead_of_queued_ordinary_calls() {
    use std::sync::Mutex;
    let (store, _g) = Store::open_in_memory().expect("open");
    let order = Arc::new(Mutex::new(Vec::<String>::new()));
    let note = |name: String, order: &Arc<Mutex<Vec<String>>>| {
        let order = order.clone();
        move |_: &Transaction<'_>| {
            order.lock().map(|mut o| o.push(name)).ok();
            Ok(())
        }
    };
    // Hold the writer inside an ordinary call until everything else is queued.
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let gate = tokio::spawn({
        let s = store.clone();
        async move {
            s.call(move |_| {
                let _ = started_tx.send(());
                let _ = gate_rx.recv();
                Ok(())
            })
            .await
        }
    });
    tokio::task::spawn_blocking(move || started_rx.recv())
        .await
        .expect("join")
        .expect("the gate call started");
    let mut ordinary = Vec::new();
    for i in 0..5 {
        let mut f = Box::pin(store.call(note(format!("ordinary {i}"), &order)));
        // One poll queues the call.
        assert!(futures_util::poll!(f.as_mut()).is_pending());
        ordinary.push(f);
    }
    let first = store.call_urgent(note("urgent 0".into(), &order));
    let second = store.call_urgent(note("urgent 1".into(), &order));
    gate_tx.send(()).expect("release");
    let (a, b) = tokio::join!(first, second);
    a.expect("urgent 0");
    b.expect("urgent 1");
    for f in ordinary {
        f.await.expect("ordinary");
    }
    gate.await.expect("join").expect("gate");
    let order = order.lock().expect("order").clone();
    assert_eq!(
        order,
        [
            "urgent 0",
            "urgent 1",
            "ordinary 0",
            "ordinary 1",
            "ordinary 2",
            "ordinary 3",
            "ordinary 4"
        ]
    );
}

#[tokio::test]
async fn a_failing_urgent_call_undoes_only_its_own_writes() {
    let (store, _g) = Store::open_in_memory().expect("open");
    let bad = store.call_urgent(|t| {
        t.execute("INSERT INTO account_state VALUES ('a', 'x', 'y')", [])?;
        t.execute("INSERT INTO no_such_table VALUES (1)", [])
            .map(drop)
    });
    let good = store.call_urgent(|t| {
        t.execute("INSERT INTO account_state VALUES ('a', 'k', '1')", [])
            .map(drop)
    });
    let (bad, good) = tokio::join!(bad, good);
    assert!(bad.is_err());
    good.expect("the good call commits");
    assert_eq!(store.get_state("a", "x").await.expect("get"), None);
    assert_eq!(
        store.get_state("a", "k").await.expect("get").as_deref(),
        Some("1")
    );
}

/// Writes `key` for account `a` and says which thread the call ran on.
fn on_thread(t: &Transaction<'_>, key: &str) -> rusqlite::Result<String> {
    t.execute(
        "INSERT INTO account_state VALUES ('a', ?1, 'v')",
        rusqlite::params![key],
    )?;
    Ok(std::thread::current().name().unwrap_or("").to_string())
}

/// Returns once the writer thread sleeps (after its short spin), when short calls run here;
/// waits on the flag it sets, not on a clock.
fn writer_asleep(store: &Store) {
    while !store.seat.asleep() {
        std::thread::yield_now();
    }
}

#[tokio::test]
async fn a_short_call_runs_here_when_the_writer_is_idle() {
    let (store, _g) = Store::open_in_memory().expect("open");
    writer_asleep(&store);
    let here = std::thread::current().name().unwrap_or("").to_string();
    let commits = store
        .counters()
        .commits
        .load(std::sync::atomic::Ordering::Relaxed);
    let ran_on = store
        .call_short(|t| on_thread(t, "k"))
        .await
        .expect("short call");
    assert_eq!(ran_on, here, "an idle writer lends the connection");
    assert_ne!(ran_on, "scv-store");
    let after = store
        .counters()
        .commits
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(after - commits, 1, "committed in a transaction of its own");
    assert_eq!(
        store.get_state("a", "k").await.expect("get").as_deref(),
        Some("v")
    );
}

#[tokio::test]
async fn a_short_call_queues_while_a_call_is_queued_or_running() {
    let (store, _g) = Store::open_in_memory().expect("open");
    // Counted as queued (a call sent, not yet taken): the short call must not pass it.
    writer_asleep(&store);
    store.seat.queue();
    let ran_on = store
        .call_short(|t| on_thread(t, "queued"))
        .await
        .expect("short call");
    assert_eq!(ran_on, "scv-store");
    store.seat.taken(1);
    // The writer inside a call: the short call waits its turn behind the call queued after it.
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let gate = store.call_queued(move |t| {
        let _ = started_tx.send(());
        let _ = gate_rx.recv();
        on_thread(t, "gate")
    });
    tokio::task::spawn_blocking(move || started_rx.recv())
        .await
        .expect("join")
        .expect("the gate call started");
    let before = store.call_queued(|t| on_thread(t, "before"));
    let mut short = Box::pin(store.call_short(|t| {
        let before: i64 = t.query_row(
            "SELECT COUNT(*) FROM account_state WHERE name = 'before'",
            [],
            |r| r.get(0),
        )?;
        assert_eq!(before, 1, "the call sent first committed first");
        on_thread(t, "short")
    }));
    assert!(futures_util::poll!(short.as_mut()).is_pending());
    gate_tx.send(()).expect("release");
    assert_eq!(gate.await.expect("gate"), "scv-store");
    assert_eq!(before.await.expect("before"), "scv-store");
    assert_eq!(short.await.expect("short"), "scv-store");
}

#[tokio::test]
async fn a_short_call_that_fails_writes_nothing() {
    let (store, _g) = Store::open_in_memory().expect("open");
    let bad = store
        .call_short(|t| {
            on_thread(t, "x")?;
            t.execute("INSERT INTO no_such_table VALUES (1)", [])
                .map(drop)
        })
        .await;
    assert!(bad.is_err());
    assert_eq!(store.get_state("a", "x").await.expect("get"), None);
    // The connection is usable here again: nothing was left open.
    store
        .call_short(|t| on_thread(t, "y"))
        .await
        .expect("the next short call");
}

#[tokio::test]
async fn a_short_call_never_waits_for_another_process_holding_the_write_lock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let (store, _g) = Store::open(&path).expect("open");
    // `sqlite3` or `doctor` in the middle of a write.
    let other = Connection::open(&path).expect("second connection");
    other
        .execute_batch("BEGIN IMMEDIATE")
        .expect("take the write lock");
    writer_asleep(&store);
    let mut short = Box::pin(store.call_short(|t| on_thread(t, "k")));
    // Not run here (it would have waited for the lock): queued for the writer, which waits.
    assert!(futures_util::poll!(short.as_mut()).is_pending());
    other
        .execute_batch("COMMIT")
        .expect("release the write lock");
    assert_eq!(short.await.expect("short call"), "scv-store");
    // The writer's own wait for another process is as long as before.
    let timeout: i64 = store
        .call_short(|t| t.query_row("PRAGMA busy_timeout", [], |r| r.get(0)))
        .await
        .expect("pragma");
    assert_eq!(timeout, 5000);
}

#[tokio::test]
async fn a_short_call_after_close_is_refused() {
    let (store, guard) = Store::open_in_memory().expect("open");
    guard.close();
    let late = store.call_short(|t| on_thread(t, "late")).await;
    assert!(matches!(late, Err(StoreError::Closed)), "{late:?}");
}

/// A connection to a new WAL database at `path` that never checkpoints by itself, whose log
/// holds one row of `bytes` zeros in table `t` (`b BLOB`).
pub(super) fn writer_with_log(path: &std::path::Path, bytes: usize) -> Connection {
    let writer = Connection::open(path).expect("open");
    writer
        .execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             CREATE TABLE t (b BLOB); INSERT INTO t VALUES (zeroblob({bytes}));"
        ))
        .expect("a log");
    writer
}

#[test]
fn the_log_restarts_between_transactions_and_never_waits_for_a_reader() {
    use checkpoint::{Restart, restart_log};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("state.db");
    let writer = writer_with_log(&path, 40_000);
    writer.busy_timeout(BUSY_TIMEOUT).expect("timeout");
    // `sqlite3` holding a snapshot in the log: the restart is refused at once, not waited for.
    let reader = Connection::open(&path).expect("reader");
    reader
        .execute_batch("BEGIN; SELECT COUNT(*) FROM t;")
        .expect("a read snapshot");
    assert_eq!(restart_log(&writer), Restart::ReaderInTheWay);
    let timeout: i64 = writer
        .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
        .expect("pragma");
    assert_eq!(timeout, 5000, "the writer's own waits are as before");
    reader.execute_batch("COMMIT").expect("end the snapshot");
    assert_eq!(restart_log(&writer), Restart::Done);
    // The next commit wrote from the log's start: the log holds that commit's pages only.
    writer
        .execute("INSERT INTO t VALUES (1)", [])
        .expect("a commit");
    let (log, copied): (i64, i64) = reader
        .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(1)?, r.get(2)?))
        })
        .expect("checkpoint");
    assert!(
        log <= 3,
        "the log restarted: {log} frames ({copied} copied)"
    );
}
