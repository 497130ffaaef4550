//! The command line through the real binary: run, init, doctor, completions, install, and the
//! README's commands.
//!
//! One test binary: each file is a module, the support is declared once here, and the tests run on
//! parallel threads of this one process (so none changes process-wide state another reads).

#[path = "../process_support/mod.rs"]
mod process_support;
#[path = "../../channels/mail/tests/support/mod.rs"]
mod server;

mod cli_run;
mod command_hints;
mod completions;
mod deploy_files;
mod doctor;
mod doctor_agents;
mod doctor_daemon;
mod doctor_mail;
mod echo_platform;
mod guide_locale;
mod init_first_answer;
mod init_locale;
mod init_rerun;
mod init_setup;
mod install;
mod onboarding;
mod quiet_pipe;
mod readme_commands;
mod readme_zh;
