//! The `scv-bridge` command line: parse flags, set up logging, hand over to the library.

use std::process::ExitCode;

use clap::Parser;
use scv_bridge::app::{Cli, LogFormat, dispatch};

fn main() -> ExitCode {
    // A shell asking for completions (`COMPLETE=bash scv-bridge -- ...`) is answered and exits.
    scv_bridge::app::answer_shell();
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
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
