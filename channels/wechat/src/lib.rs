//! `scv-wechat`: a client for the WeChat iLink bot API (QR login, `getupdates` long polling,
//! `sendmessage`, typing) and, behind the `fake` feature, a faithful fake iLink server for tests.
//! It knows nothing of the bridge daemon: no policy, no store, no supervisor.
