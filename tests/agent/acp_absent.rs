//! The real-agent tests (`tests/acp_real/acp_real.rs`, `tests/acp_real/acp_chat.rs`) without the agents: each
//! counts as ignored, with the reason, never as passed; with them, each runs.

use crate::acp_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use libtest_mimic::{Arguments, Conclusion};

fn run(trial: libtest_mimic::Trial) -> Conclusion {
    let args = Arguments {
        test_threads: Some(1),
        quiet: true,
        ..Arguments::default()
    };
    libtest_mimic::run(&args, vec![trial])
}

fn counts(c: &Conclusion) -> (u64, u64, u64) {
    (c.num_passed, c.num_ignored, c.num_failed)
}

#[test]
fn without_the_agents_a_real_agent_test_is_ignored_not_passed() {
    let ran = Arc::new(AtomicBool::new(false));
    let seen = ran.clone();
    let c = run(acp_support::agent_trial(
        "absent",
        None,
        move |_| async move {
            seen.store(true, Ordering::SeqCst);
        },
    ));
    assert_eq!(counts(&c), (0, 1, 0), "passed, ignored, failed");
    assert!(!ran.load(Ordering::SeqCst), "the body never ran");
}

#[test]
fn with_the_agents_a_real_agent_test_runs_and_its_panic_fails_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    let c = run(acp_support::agent_trial(
        "present",
        Some(path.clone()),
        move |d| async move { assert_eq!(d, path) },
    ));
    assert_eq!(counts(&c), (1, 0, 0), "passed, ignored, failed");
    let c = run(acp_support::agent_trial(
        "failing",
        Some(dir.path().to_path_buf()),
        |_| async { panic!("the agent did not answer") },
    ));
    assert_eq!(counts(&c), (0, 0, 1), "passed, ignored, failed");
}
