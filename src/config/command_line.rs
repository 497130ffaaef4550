//! The commands printed for people (fixes, hints): `scv-bridge ARGS`, with `--config FILE` when the
//! configuration is not at the default location, so a copied command reaches the same bridge.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How a person runs `scv-bridge` against one configuration file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandLine {
    /// The file to name with `--config`; `None` when it is the default location.
    config: Option<PathBuf>,
}

/// The command line of this process, set once by the binary (`run` and every client command).
static CURRENT: OnceLock<CommandLine> = OnceLock::new();

impl CommandLine {
    /// Commands for the configuration at `path` (absolute in the printed command, so it works
    /// from any directory).
    pub fn for_config(path: &Path) -> CommandLine {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let default = default_location();
        let same = path == default
            || matches!(
                (path.canonicalize(), default.canonicalize()),
                (Ok(a), Ok(b)) if a == b
            );
        CommandLine {
            config: (!same).then_some(path),
        }
    }

    /// `scv-bridge [--config FILE] ARGS`, the file quoted for a POSIX shell when it needs it.
    pub fn command(&self, args: &str) -> String {
        match &self.config {
            None => format!("scv-bridge {args}"),
            Some(p) => format!("scv-bridge --config {} {args}", shell_quote(p)),
        }
    }

    /// Makes this the process's command line (see [`command`]); later calls keep the first.
    pub fn install(self) {
        let _ = CURRENT.set(self);
    }

    /// The process's command line: the installed one, else plain `scv-bridge` (a library caller
    /// that installed none, such as an in-process test daemon).
    pub fn current() -> &'static CommandLine {
        static PLAIN: CommandLine = CommandLine { config: None };
        CURRENT.get().unwrap_or(&PLAIN)
    }
}

/// `scv-bridge [--config FILE] ARGS` for this process's configuration. Hints built deep inside the
/// daemon (adapters, confirm) use it: one process serves one configuration file.
pub fn command(args: &str) -> String {
    CommandLine::current().command(args)
}

/// The command that prints the documented example configuration (it needs no configuration, so
/// it never names one).
pub const EXAMPLE_COMMAND: &str = "scv-bridge config example";

/// Where the configuration lives when neither `--config` nor `$SCV_BRIDGE_CONFIG` names it.
///
/// The environment variable is left out on purpose: the shell a person copies a command into
/// may not have it (a systemd unit's `Environment=`), so a file it names is spelled out.
pub fn default_location() -> PathBuf {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| super::home_dir().join(".config"));
    base.join("scv-bridge").join("config.toml")
}

/// A path as one POSIX shell word: unchanged when it is plain, single-quoted otherwise.
pub fn shell_quote(p: &Path) -> String {
    let s = p.to_string_lossy();
    // `try_quote` refuses only NUL, which a path cannot hold.
    shlex::try_quote(&s)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| s.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_location_is_not_named() {
        let c = CommandLine::for_config(&default_location());
        assert_eq!(c.command("reload"), "scv-bridge reload");
        assert_eq!(
            CommandLine::default().command("login wechat phone"),
            "scv-bridge login wechat phone"
        );
    }

    #[test]
    fn another_file_is_named_absolute_and_quoted_when_it_needs_it() {
        let c = CommandLine::for_config(Path::new("/etc/scv-bridge/config.toml"));
        assert_eq!(
            c.command("login wechat phone"),
            "scv-bridge --config /etc/scv-bridge/config.toml login wechat phone"
        );
        let c = CommandLine::for_config(Path::new("/srv/my bridge/it's.toml"));
        let line = c.command("reload");
        assert_eq!(
            shlex::split(&line).expect("one shell line"),
            [
                "scv-bridge",
                "--config",
                "/srv/my bridge/it's.toml",
                "reload"
            ]
        );
        let rel = CommandLine::for_config(Path::new("conf/c.toml")).command("reload");
        let cwd = std::env::current_dir().expect("cwd");
        assert_eq!(
            rel,
            format!(
                "scv-bridge --config {} reload",
                cwd.join("conf/c.toml").display()
            )
        );
    }
}
