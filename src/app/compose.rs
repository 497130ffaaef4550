//! The composition root: what the real daemon is built from (agent, pipeline, confirm service,
//! adapters) and how it stops. Tests build their own daemons from the same parts.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::adapters::{PlatformFactory, PlatformParts};
use crate::config::Config;
use crate::confirm::Clock;
use crate::daemon::Wiring;
use crate::secrets::CredentialStore;
use crate::store::Store;
use crate::supervisor::{ComponentFactory, HealthRegistry, LifecyclePolicy};

/// `scv-bridge run`: builds the daemon from the file and runs it until SIGTERM or SIGINT;
/// SIGHUP reloads the file.
pub(super) async fn run(config_path: &Path) -> Result<ExitCode, String> {
    let hangups = super::hangup::listen();
    let (config, first_run) = load_or_default(config_path)?;
    // Bound before the daemon starts; a port that cannot be bound is logged and the daemon
    // runs without a console (status then shows none, and `console` says why).
    let console = match config.console_listen {
        Some(addr) => match crate::console::bind(addr).await {
            Ok(l) => Some(l),
            // A first run is set up in the console and nowhere else: when the built-in address
            // is taken (7860 is also Gradio's default), a free port on the same address serves
            // it, and `console` prints its link as usual.
            Err(e) if first_run && e.kind() == std::io::ErrorKind::AddrInUse => {
                tracing::warn!(%addr, "the console's built-in address is taken; serving it on a free port (`scv-bridge console` prints its link)");
                crate::console::bind(std::net::SocketAddr::new(addr.ip(), 0))
                    .await
                    .ok()
            }
            Err(e) => {
                tracing::error!(%addr, error = %e, "cannot serve the console; fix console_listen and restart");
                None
            }
        },
        None => None,
    };
    let mut agent_config = config.agent.clone();
    let (named_agents, choices) = (config.agents.clone(), config.choices.clone());
    let timezone = config.timezone;
    let wire = move |creds: &CredentialStore, store: &Store, registry: &Arc<HealthRegistry>| {
        // The key `login agent` stored, for when no variable names one (a small read, once, at
        // start; an unreadable entry is the same as none, and the agent then says what is missing).
        agent_config.stored_api_key = match creds.agent_key() {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!(error = %e, "the stored agent key cannot be read");
                None
            }
        };
        // A backend that cannot work is a stand-in that says why: accounts still connect, status
        // shows "not configured" from the start, and the owner is told why nobody answers.
        let agent = crate::agent::build(&agent_config, store.clone());
        let (confirm, conversation) =
            crate::daemon::confirm_and_pipeline(store, creds, Clock::system(), registry, agent);
        // The named agents beside it (each with the key stored under its name), and which of
        // them each account's chats talk to.
        let keyed = crate::agent::registry::with_stored_keys(&named_agents, creds);
        let named = crate::agent::registry::build_named(&keyed, store);
        conversation.set_agents(named, choices);
        let ctx = PlatformParts {
            credentials: creds.clone(),
            store: store.clone(),
            conversation: conversation.clone(),
            agent: agent_config,
            mail: crate::mail::MailEnv::new(timezone),
        };
        // Button presses (Feishu card clicks) answer confirm questions.
        let factory: Arc<dyn ComponentFactory> =
            PlatformFactory::with_answers(ctx, confirm.clone());
        Wiring {
            factory,
            conversation: Some(conversation),
            confirm: Some(confirm),
        }
    };
    let daemon = crate::daemon::start_with(config, wire, LifecyclePolicy::default())
        .await
        .map_err(|e| e.to_string())?;
    if let Some(listener) = console {
        crate::console::start(
            daemon.core.clone(),
            config_path.to_path_buf(),
            listener,
            daemon.shutdown.clone(),
        );
    }
    if first_run {
        println!("{}", first_run_line(&daemon.core, config_path));
    }
    if let Some(h) = hangups {
        tokio::spawn(super::hangup::reload_on_hangup(h, daemon.core.clone()));
    }
    let shutdown = daemon.shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("stopping: signal received");
        shutdown.cancel();
    });
    let report = daemon.wait().await;
    if report.abandoned.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "scv-bridge: abandoned while stopping: {}",
            report.abandoned.join(", ")
        );
        Ok(ExitCode::from(1))
    }
}

/// The file, or on a first run (no file there yet) the built-in defaults: state under XDG, no
/// accounts, the console on this machine, where the set-up is done.
fn load_or_default(path: &Path) -> Result<(Config, bool), String> {
    match Config::load(path) {
        Ok(c) => Ok((c, false)),
        Err(_) if !path.exists() => {
            tracing::info!(path = %path.display(), "no configuration yet: running on built-in defaults");
            let built_in = Config::parse(path, "").map_err(|e| e.to_string())?;
            Ok((built_in, true))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// What a first run says on its terminal: where to set it up. The one-time link is printed only
/// to a terminal: under a service manager the output is a log, and a login link must not sit
/// in one; the command that makes a link is printed instead.
fn first_run_line(core: &crate::daemon::Core, path: &Path) -> String {
    use std::io::IsTerminal;
    let commands = crate::config::CommandLine::for_config(path);
    let console = commands.command("console");
    let head = format!(
        "No configuration at {} yet: the bridge runs on built-in defaults (no accounts).",
        path.display()
    );
    let link = std::io::stdout()
        .is_terminal()
        .then(|| core.one_time_link())
        .flatten();
    match link {
        Some(link) => format!(
            "{head}\nSet it up in the console: {link}\n(one-time link; another: `{console}`)"
        ),
        None => format!(
            "{head}\nSet it up in the console: run `{console}` for a login link, or `{}` on a terminal.",
            commands.command("init")
        ),
    }
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
