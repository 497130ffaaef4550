//! Tables of the wechat module (append steps; every per-account table has an `account` column).

/// The wechat module's migrations.
pub(super) const STEPS: &[&str] = &[
    // 1: each peer's latest context token and send window; the outcome of each client_id sent.
    "CREATE TABLE wechat_peers (
        account TEXT NOT NULL,
        peer TEXT NOT NULL,
        -- The latest context_token from this peer's messages (replies must echo it).
        context_token TEXT NOT NULL,
        -- When the peer last wrote (wall clock, Unix ms): the 24 h window runs from here.
        last_inbound_ms INTEGER NOT NULL,
        -- Bot sends accepted since that message (WeChat allows about 10).
        sends INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (account, peer)
     );
     CREATE TABLE wechat_sends (
        account TEXT NOT NULL,
        client_id TEXT NOT NULL,
        -- sending | unknown | refused | accepted
        state TEXT NOT NULL,
        -- 1 once any attempt ended without a definite answer (crash, timeout, network error):
        -- the platform may have accepted it, so a later ret=-2 may mean 'already delivered'.
        ambiguous INTEGER NOT NULL DEFAULT 0,
        first_refused_ms INTEGER,
        updated_ms INTEGER NOT NULL,
        PRIMARY KEY (account, client_id)
     );
     CREATE INDEX wechat_sends_age ON wechat_sends (updated_ms);",
    // 2: the adapter keeps its state through the account's namespaced state (the port), not its
    // own tables: each peer becomes `wechat_peer/<peer>` and each send record
    // `wechat_send/<client_id>`, as JSON, in `account_state`. Field names are what
    // `adapters/wechat/state.rs` reads; keep them stable.
    "INSERT OR REPLACE INTO account_state (account, name, value)
       SELECT account, 'wechat_peer/' || peer,
              json_object('context_token', context_token, 'last_inbound_ms', last_inbound_ms,
                          'sends', sends)
       FROM wechat_peers;
     INSERT OR REPLACE INTO account_state (account, name, value)
       SELECT account, 'wechat_send/' || client_id,
              json_object('state', state,
                          'ambiguous', json(CASE WHEN ambiguous THEN 'true' ELSE 'false' END),
                          'first_refused_ms', first_refused_ms, 'updated_ms', updated_ms)
       FROM wechat_sends;
     DROP TABLE wechat_peers;
     DROP TABLE wechat_sends;",
];
