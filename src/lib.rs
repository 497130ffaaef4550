//! scv-bridge: one supervised task per chat account (WeChat, Feishu, Telegram, WeCom, DingTalk,
//! QQ, mail) between a person's phone and their agent.
//!
//! # Layout
//!
//! - [`app`]: the program: flags, the composition root, what each command does.
//! - [`metrics`]: the Prometheus page over HTTP (axum): build, agent, states, restarts, counters,
//!   outbox depth and the latency histograms of [`telemetry`].
//! - [`telemetry`]: latency histograms the pipeline records (turns, sends, journal commits).
//! - [`policy`]: who may do what (drop, answer with or without tools, mail chat), one pure function.
//! - [`protocol`]: wire types of the control socket and its bounded JSON-lines framing.
//! - [`config`]: the TOML configuration, validated with errors that name file, line and key.
//! - [`store`]: SQLite state (settings, cursors, journal, outbox) behind one writer thread.
//! - [`sd_notify`]: systemd readiness and a watchdog fed only while the store answers.
//! - [`secrets`]: credentials in the OS keyring or in 0600 files; secrets redact themselves.
//! - [`supervisor`]: the `Component` trait, lifecycle, backoff, health registry, reconcile.
//! - [`conversation`]: inbound → journal → policy → agent → outbox, the same for every platform.
//! - [`confirm`]: owner yes/no questions: ask, deliver, read answers, deadlines, `scv-bridge confirm`.
//! - [`owner`]: reaching the owner: `scv-bridge send` now or at a time (stored, in the
//!   configured zone), routes that move, alerts, and where each message stands.
//! - [`agent`]: agent backends (OpenAI-compatible HTTP, SCV agent server, ACP coding agents)
//!   behind one trait.
//! - [`control`]: the `daemon.control` Unix socket server.
//! - [`console`]: the web console (axum, maud): the owner's view of the daemon over HTTP, its
//!   questions, any account's login (codes to scan, questions in a form); one-time links,
//!   sessions, CSRF, a strict CSP.
//! - [`cli`]: command-line rendering (the status table, human durations).
//! - [`client`]: the control socket client used by the command line.
//! - [`daemon`]: wires configuration, store, supervisor and control socket into `run`.
//! - [`doctor`]: `scv-bridge doctor`: every dependency checked, each with its fix.
//! - [`probe`]: what a doctor check is, and the network probes the platforms' checks share.
//! - [`login`]: `scv-bridge login CHANNEL ACCOUNT`: walk the platform's login steps, store, pair.
//! - [`setup`]: what `init` and the console write: a plan applied to the file, comments kept.
//! - [`port`]: what the daemon lends each account: its state, its login, an inbox into the pipeline.
//! - [`adapters`]: each platform crate turned into a `Component` over a port, and the platform
//!   registry (`adapters::platform`), one value per channel: label, capabilities, pace, login
//!   steps, doctor probes, set-up questions.
//! - [`mail`]: the mail area: the IMAP component, triage (rules, model, budget, digests), mail chat.
//! - [`clock`]: the one clock: wall time in the daemon, paused or hand-moved in tests; a leaf.
//! - [`failure`]: the one failure type: class, stable code, message and the typed fix.
//! - [`ids`]: the shared names (platform, account, chat, sender, question, outbox key): a leaf.
//! - [`media`]: what people send and the agent sends back, kept inside the account's workspace
//!   (the inbox, safe names, which files an answer may send).
//! - [`speech`]: voice notes into text and answers into voice through an OpenAI-compatible
//!   speech server (SILK decoded first, Ogg Opus durations).
//! - [`words`]: every text a person reads in a chat, in English and Simplified Chinese.
//! - [`secret`]: a value that never prints itself and is wiped on drop.
//! - [`testing`]: test support: a scriptable fake component, fake OpenAI and SCV agent servers
//!   (never reachable from configuration).

pub mod adapters;
pub mod agent;
pub mod app;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod confirm;
pub mod console;
pub mod control;
pub mod conversation;
pub mod daemon;
pub mod doctor;
pub mod failure;
pub mod ids;
pub mod login;
pub mod mail;
pub mod media;
pub mod metrics;
pub mod owner;
pub mod policy;
pub mod port;
pub mod probe;
pub mod protocol;
pub mod sd_notify;
pub mod secret;
pub mod secrets;
pub mod setup;
pub mod speech;
pub mod store;
pub mod supervisor;
pub mod telemetry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod words;

#[cfg(test)]
mod layout_tests {
    /// The module map above names every module this file declares, so it stays the whole map.
    #[test]
    fn the_layout_names_every_module() {
        let text = include_str!("lib.rs");
        let (doc, code) = text
            .split_once("\n\npub mod ")
            .expect("the map, then the modules");
        let code = format!("pub mod {code}");
        let declared: Vec<&str> = code
            .lines()
            .filter_map(|l| l.strip_prefix("pub mod "))
            .filter_map(|l| l.strip_suffix(';'))
            .collect();
        assert!(declared.len() > 20, "{declared:?}");
        for m in declared {
            assert!(
                doc.contains(&format!("[`{m}`]")),
                "`{m}` is missing from the layout in lib.rs"
            );
        }
    }
}
