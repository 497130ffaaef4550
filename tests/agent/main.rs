//! The agent backends (openai, scv, acp) against their fakes, and the agent inside the pipeline and
//! a running daemon.
//!
//! One test binary: each file is a module, the support is declared once here, and the tests run on
//! parallel threads of this one process (so none changes process-wide state another reads).

#[path = "../acp_support/mod.rs"]
mod acp_support;
#[path = "../memory_support/mod.rs"]
mod memory_support;
#[path = "../process_support/mod.rs"]
mod process_support;

mod acp_absent;
mod acp_fake;
// Installs the process's one global log subscriber (INFO, every thread) and looks in it for its
// own agent's end only; no other test here installs one.
mod acp_misbehaving;
mod acp_process;
mod agent_ended;
mod agent_health;
mod agent_key_store;
mod agent_openai;
mod agent_scv;
mod agent_scv_approvals;
mod answer_cap;
mod openai_tools;
mod pipeline_daemon;
mod stream_progress_daemon;
mod stream_progress_scv;
