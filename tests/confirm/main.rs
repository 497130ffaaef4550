//! Confirm questions: through the pipeline, the daemon and its control socket, in both languages: one test binary, each file below one area of it (they share the support
//! modules declared here and run on parallel threads).

mod confirm_support;

mod card_updates;
mod confirm_approvals;
mod confirm_daemon;
mod confirm_pipeline;
mod confirm_words;
mod fast_route;
mod send_health;
