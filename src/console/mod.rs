//! The web console: the daemon's state, its open questions and any account's login (codes to scan,
//! questions in a form), in
//! a browser, served on `console_listen` with the owner's authority.
//!
//! Started by the composition root beside the daemon (`app/compose.rs`) and stopped with it
//! (the daemon's shutdown token, as the metrics page). `scv-bridge console` asks the daemon for
//! a one-time link (`console_link`, the keys in `daemon/console_keys.rs`), which this server
//! exchanges for an `HttpOnly; SameSite=Strict` session cookie (`guard.rs`). Pages are rendered
//! on the server with maud (`pages.rs`) from the status the control socket gives; a live part
//! is pushed over server-sent events when something changes (`live.rs`); a login walks the
//! platform's steps with a web `LoginUi` (`scan.rs`); answers go to the confirm service
//! (`answer.rs`). No secret, token, message or mail text is rendered, except the pending
//! question's text and the QR code, which the owner is shown on purpose.

mod agents;
mod answer;
mod chat;
mod config_file;
mod fix;
mod guard;
mod live;
mod local;
mod pages;
mod posted;
mod scan;
mod setup;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::daemon::Core;

pub use local::LocalServer;

/// What every request handler is given.
#[derive(Clone)]
pub(crate) struct Console {
    core: Arc<Core>,
    /// The configuration file, reread for each login (as `scv-bridge login` reads it).
    config_path: PathBuf,
    scans: Arc<scan::Scans>,
    /// Where a model server on this machine may answer (offered on the model form).
    local: Arc<Vec<LocalServer>>,
    /// The daemon's shutdown: ends the live streams, so the server can stop.
    stop: CancellationToken,
}

/// Binds the console's address (before the daemon starts, so a taken port is said at once).
pub async fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// Serves the console for `core` on `listener` until `stop` fires (spawned; a failure is
/// logged). The daemon's status shows the console from this call on.
pub fn start(
    core: Arc<Core>,
    config_path: PathBuf,
    listener: TcpListener,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    start_with(core, config_path, listener, stop, LocalServer::defaults())
}

/// [`start`], looking for local model servers at `local` instead of their default ports
/// (tests point it at their fakes).
pub fn start_with(
    core: Arc<Core>,
    config_path: PathBuf,
    listener: TcpListener,
    stop: CancellationToken,
    local: Vec<LocalServer>,
) -> tokio::task::JoinHandle<()> {
    if let Ok(bound) = listener.local_addr() {
        core.console_served(bound);
        if !bound.ip().is_loopback() {
            tracing::warn!(%bound, "the console listens beyond this machine (console_listen)");
        }
        tracing::info!(%bound, "console listening; `scv-bridge console` prints a login link");
    }
    let console = Console {
        core,
        config_path,
        scans: Arc::new(scan::Scans::default()),
        local: Arc::new(local),
        stop: stop.clone(),
    };
    tokio::spawn(async move {
        let served = axum::serve(listener, router(console))
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::error!(error = %e, "the console stopped serving");
        }
    })
}

/// Every route: the login link and the assets are open; the rest needs a session.
fn router(console: Console) -> Router {
    let owner = Router::new()
        .route("/", get(pages::home))
        .route("/events", get(live::events))
        .route("/scan", post(scan::start))
        .route("/scan/answer", post(scan::answer))
        .route("/setup/agent", post(setup::agent))
        .route("/setup/speech", post(setup::speech))
        .route("/setup/agents", post(agents::add))
        .route("/setup/chat", post(chat::chat))
        .route("/answer", post(answer::answer))
        .route("/fix", post(fix::fix))
        .route_layer(axum::middleware::from_fn_with_state(
            console.clone(),
            guard::owner_only,
        ));
    Router::new()
        .route("/login", get(guard::login))
        .route("/assets/console.js", get(pages::script))
        .route("/assets/console.css", get(pages::style))
        .merge(owner)
        .layer(axum::middleware::from_fn(guard::headers))
        .with_state(console)
}
