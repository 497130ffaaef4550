//! The REAL codex-acp and claude-agent-acp (`SCV_ACP_AGENTS`): the `acp` backend driving them
//! ([`acp_real`]), the whole bridge with them from the WeChat chat ([`acp_chat`]), and codex-acp
//! reaching the owner tools over the bridge's MCP server ([`acp_tools`]). One
//! `harness = false` binary (libtest-mimic), so that without `SCV_ACP_AGENTS` the trials count as
//! ignored, with the reason, decided when they run.

mod acp_chat;
mod acp_real;
#[path = "../acp_support/mod.rs"]
mod acp_support;
mod acp_tools;
#[path = "../confirm/confirm_support/mod.rs"]
mod confirm_support;
#[path = "../owner_tools_support/mod.rs"]
mod owner_tools_support;
#[path = "../process_support/mod.rs"]
mod process_support;

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let mut trials = acp_real::trials();
    trials.extend(acp_chat::trials());
    trials.extend(acp_tools::trials());
    libtest_mimic::run(&args, trials).exit();
}
