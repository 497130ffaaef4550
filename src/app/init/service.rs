//! Installing the systemd user service: `deploy/scv-bridge.user.service`, built into the binary,
//! pointed at this binary and this configuration, with the state directory and every account's
//! workspace writable (the unit makes the rest of the system read-only).

use std::path::Path;

use crate::config::{Config, default_state_dir};

/// The user unit as shipped.
const USER_UNIT: &str = include_str!("../../../deploy/scv-bridge.user.service");

/// The line of the shipped unit that lists the writable paths.
const WRITABLE: &str = "ReadWritePaths=%h/.local/state/scv-bridge %t";

/// The unit for `exe` running the configuration at `config_path`.
pub fn unit_text(exe: &Path, config_path: &Path, config: &Config) -> String {
    let mut writable = vec![systemd_word(&config.state_dir)];
    if config.state_dir != default_state_dir() {
        writable.push("-%h/.local/state/scv-bridge".into());
    }
    for a in config.accounts.values() {
        if let Some(w) = &a.workspace {
            let w = systemd_word(w);
            if !writable.contains(&w) {
                writable.push(w);
            }
        }
    }
    writable.push("%t".into());
    USER_UNIT
        .replace("%h/.cargo/bin/scv-bridge", &systemd_word(exe))
        .replace(
            "%h/.config/scv-bridge/config.toml",
            &systemd_word(config_path),
        )
        .replace(WRITABLE, &format!("ReadWritePaths={}", writable.join(" ")))
}

/// A path as one word of a unit file: quoted when it has spaces, `%` doubled (a specifier).
fn systemd_word(p: &Path) -> String {
    let s = p.display().to_string().replace('%', "%%");
    if s.contains(char::is_whitespace) {
        format!("\"{s}\"")
    } else {
        s
    }
}

/// Writes the unit to `~/.config/systemd/user/scv-bridge.service` and enables it; the line says
/// what happened (or the commands to run, where systemctl is missing).
pub async fn install(config_path: &Path, config: &Config) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let config_path = std::path::absolute(config_path).map_err(|e| e.to_string())?;
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| crate::config::home_dir().join(".config"));
    let dir = base.join("systemd").join("user");
    let unit = dir.join("scv-bridge.service");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    std::fs::write(&unit, unit_text(&exe, &config_path, config))
        .map_err(|e| format!("cannot write {}: {e}", unit.display()))?;
    let steps: [&[&str]; 2] = [
        &["--user", "daemon-reload"],
        &["--user", "enable", "--now", "scv-bridge"],
    ];
    for args in steps {
        let out = tokio::process::Command::new("systemctl")
            .args(args)
            .output()
            .await;
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                return Err(format!(
                    "{} is written, but `systemctl {}` failed: {}",
                    unit.display(),
                    args.join(" "),
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
            }
            Err(e) => {
                return Err(format!(
                    "{} is written, but systemctl cannot run ({e}); run `systemctl --user daemon-reload && systemctl --user enable --now scv-bridge`",
                    unit.display()
                ));
            }
        }
    }
    Ok(format!(
        "the user service is installed ({}) and running; `loginctl enable-linger \"$USER\"` keeps it running after you log out",
        unit.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unit_runs_this_binary_on_this_file_and_can_write_the_workspaces() {
        let text = "state_dir = \"/srv/bridge state\"\n[agent]\nmodel = \"m\"\n[wechat.phone]\nworkspace = \"/home/me/work\"\n";
        let cfg = Config::parse(Path::new("/etc/b.toml"), text).expect("parses");
        let unit = unit_text(
            Path::new("/opt/bin/scv-bridge"),
            Path::new("/etc/b.toml"),
            &cfg,
        );
        assert!(
            unit.contains("ExecStart=/opt/bin/scv-bridge --config /etc/b.toml run"),
            "{unit}"
        );
        assert!(
            unit.contains(
                "ReadWritePaths=\"/srv/bridge state\" -%h/.local/state/scv-bridge /home/me/work %t"
            ),
            "{unit}"
        );
        assert!(!unit.contains(".cargo/bin"), "{unit}");
    }
}
