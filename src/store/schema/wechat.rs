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
];
