//! Agent backends (openai, scv, acp) and the agent inside the pipeline and the daemon: one test binary, each file below one area of it (they share the support
//! modules declared here and run on parallel threads).

#[path = "../acp_support/mod.rs"]
mod acp_support;
#[path = "../memory_support/mod.rs"]
mod memory_support;
#[path = "../process_support/mod.rs"]
mod process_support;

mod acp_absent;
mod acp_fake;
mod acp_misbehaving;
mod acp_process;
mod agent_ended;
mod agent_health;
mod agent_key_store;
mod agent_openai;
mod agent_scv;
mod agent_scv_approvals;
mod answer_cap;
mod pipeline_daemon;
mod stream_progress_daemon;
mod stream_progress_scv;
