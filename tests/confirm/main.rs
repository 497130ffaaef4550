//! Confirm questions: through the pipeline, the daemon and its control socket, in both languages.
//!
//! One test binary: each file is a module, the support is declared once here, and the tests run on
//! parallel threads of this one process (so none changes process-wide state another reads).

mod confirm_support;

mod card_updates;
mod confirm_approvals;
mod confirm_daemon;
mod confirm_pipeline;
mod confirm_words;
mod fast_route;
mod owner_alerts;
mod owner_files;
mod owner_moves_next;
mod owner_routes;
mod owner_send;
mod owner_tools;
mod owner_tools_openai;
#[path = "../owner_tools_support/mod.rs"]
mod owner_tools_support;
mod send_health;
