//! `scv-feishu`: a client for the Feishu / Lark open platform bot (tenant token cache, the
//! WebSocket long connection with its protobuf frames, the HTTP callback mode, REST messages
//! and cards) and, behind the `fake` feature, a faithful fake Feishu for tests.
//! It knows nothing of the bridge daemon: no policy, no store, no supervisor.
