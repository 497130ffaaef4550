//! Finding the control socket for client commands even when the configuration file has an error:
//! `status` needs only the socket path, and a running daemon keeps the configuration it loaded.

use std::path::{Path, PathBuf};

use super::{Config, expand_tilde, socket_path};

/// Where a client command finds the daemon, and what to warn about when the file could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSocket {
    /// The control socket.
    pub path: PathBuf,
    /// Set when the configuration has an error: the error and where the socket was looked for.
    pub warning: Option<String>,
}

/// The socket the daemon for `config_path` listens on: from the validated configuration, else from
/// whatever `socket` and `state_dir` the file still yields, else the default location.
pub fn client_socket(config_path: &Path) -> ClientSocket {
    let error = match Config::load(config_path) {
        Ok(c) => {
            return ClientSocket {
                path: c.socket,
                warning: None,
            };
        }
        Err(e) => e,
    };
    let text = std::fs::read_to_string(config_path).unwrap_or_default();
    let socket = top_level_string(&text, "socket");
    let state_dir = top_level_string(&text, "state_dir")
        .unwrap_or_else(|| "~/.local/state/scv-bridge".to_string());
    let path = socket_path(socket.as_deref(), &expand_tilde(&state_dir));
    ClientSocket {
        warning: Some(format!(
            "{error}\nlooking for the daemon at {} (a running daemon keeps the configuration it loaded)",
            path.display()
        )),
        path,
    }
}

/// A top-level string key of a TOML file, even when other parts of the file do not parse.
fn top_level_string(text: &str, key: &str) -> Option<String> {
    if let Ok(table) = toml::from_str::<toml::Table>(text) {
        return table.get(key).and_then(|v| v.as_str()).map(str::to_string);
    }
    // A syntax error somewhere: read the lines before the first table one by one.
    text.lines()
        .take_while(|l| !l.trim_start().starts_with('['))
        .filter_map(|l| toml::from_str::<toml::Table>(l).ok())
        .find_map(|t| t.get(key).and_then(|v| v.as_str()).map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_file_still_yields_its_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.toml");
        let good = "socket = \"/run/x/daemon.sock\"\n[wechat.a]\n";
        std::fs::write(&path, good).expect("write");
        assert_eq!(
            client_socket(&path),
            ClientSocket {
                path: PathBuf::from("/run/x/daemon.sock"),
                warning: None
            }
        );
        // A semantic error, then a syntax error: the socket line is still read.
        for bad in [
            "socket = \"/run/x/daemon.sock\"\n[wechat.a]\nsenders = \"all\"\n",
            "socket = \"/run/x/daemon.sock\"\n[wechat.a]\nsenders = = \n",
        ] {
            std::fs::write(&path, bad).expect("write");
            let s = client_socket(&path);
            assert_eq!(s.path, PathBuf::from("/run/x/daemon.sock"), "{bad}");
            let w = s.warning.expect("a warning");
            assert!(
                w.contains("config.toml:3") && w.contains("/run/x/daemon.sock"),
                "{w}"
            );
        }
        // state_dir gives the fallback when socket is not set and XDG_RUNTIME_DIR is not either.
        std::fs::write(&path, "state_dir = \"/srv/s\"\n[[oops\n").expect("write");
        let s = client_socket(&path);
        let expected = socket_path(None, Path::new("/srv/s"));
        assert_eq!(s.path, expected);
    }
}
