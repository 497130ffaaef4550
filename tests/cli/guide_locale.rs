//! `scv-bridge guide` follows the locale (`LC_ALL`, then `LC_MESSAGES`, then `LANG`) unless
//! `--lang` says otherwise, takes `zh`, `zh_CN` and `zh-CN`, and prints no Markdown marks.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_scv-bridge");

fn guide(args: &[&str], env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new(BIN);
    cmd.arg("guide").args(args);
    for k in ["LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"] {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let out = cmd.output().expect("run the binary");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

const ZH: &str = "渠道设置指南\n";
const EN: &str = "Setting up the channels\n";

#[test]
fn the_locale_chooses_and_the_flag_wins() {
    assert!(guide(&[], &[]).starts_with(EN));
    assert!(guide(&[], &[("LANG", "zh_CN.UTF-8")]).starts_with(ZH));
    assert!(guide(&[], &[("LANG", "en_US.UTF-8"), ("LC_ALL", "zh_CN.UTF-8")]).starts_with(ZH));
    assert!(guide(&["--lang", "en"], &[("LANG", "zh_CN.UTF-8")]).starts_with(EN));
    for name in ["zh", "zh_CN", "zh-CN"] {
        assert!(guide(&["--lang", name], &[]).starts_with(ZH), "{name}");
    }
}

#[test]
fn the_guide_reads_as_plain_text() {
    for args in [&["--lang", "en"][..], &["--lang", "zh"][..]] {
        let t = guide(args, &[]);
        assert!(!t.contains("]("), "a Markdown link in {args:?}");
        assert!(!t.contains("**"), "bold marks in {args:?}");
    }
}
