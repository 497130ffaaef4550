//! The `scv-bridge` command line: parse flags, set up logging, hand over to the library.

use std::process::ExitCode;

use clap::Parser;
use scv_bridge::app::{Cli, LogFormat, dispatch};

fn main() -> ExitCode {
    one_heap();
    // A shell asking for completions (`COMPLETE=bash scv-bridge -- ...`) is answered and exits.
    scv_bridge::app::answer_shell();
    let cli = Cli::parse();
    init_logging(cli.log_format);
    // One person's chats wait on the network: two workers carry them on any machine, and a
    // many-core server does not add a thread (and its stack) per core for months.
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("scv-bridge: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("scv-bridge: {message}");
            ExitCode::from(1)
        }
    }
}

/// Keeps every thread's allocations in one glibc arena. By default glibc gives each thread that
/// allocates an arena of its own (up to eight per core), each holding freed memory apart; the
/// daemon's few threads are idle nearly always, and one arena is measurably less resident memory
/// at no cost a chat bridge can see. Small allocations still go through each thread's cache
/// without the lock.
fn one_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

fn init_logging(format: LogFormat) {
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Protocol libraries log raw traffic (mail text, chat frames) at debug/trace: never let them,
    // whatever RUST_LOG says.
    let quiet = scv_bridge::mail::QUIET_PROTOCOL_LOGS.iter().chain(&[
        "hyper=info",
        "hyper_util=info",
        "reqwest=info",
        "h2=info",
        "tungstenite=info",
        "tokio_tungstenite=info",
        "rustls=info",
    ]);
    for directive in quiet {
        if let Ok(d) = directive.parse() {
            filter = filter.add_directive(d);
        }
    }
    // Colours only for a person at a terminal: journald and log files get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Pretty => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
