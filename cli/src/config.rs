//! Where `ar` keeps the server's URL and the user's token between commands: one JSON file in
//! the user's configuration directory, readable by its owner only (0600, directory 0700),
//! because the token is as good as the password until it expires or the user logs out.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{CliError, CliResult};

/// What `ar login` saves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Saved {
    /// The server (`http://127.0.0.1:8080`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Who logged in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// When the token stops working.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<DateTime<Utc>>,
}

/// The directory: `ANTEROOM_CONFIG_DIR`, else `$XDG_CONFIG_HOME/anteroom`, else
/// `$HOME/.config/anteroom`.
pub fn dir(get: impl Fn(&str) -> Option<String>) -> CliResult<PathBuf> {
    let set = |name: &str| get(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = set("ANTEROOM_CONFIG_DIR") {
        return Ok(dir);
    }
    if let Some(xdg) = set("XDG_CONFIG_HOME") {
        return Ok(xdg.join("anteroom"));
    }
    set("HOME")
        .map(|home| home.join(".config").join("anteroom"))
        .ok_or_else(|| CliError::Usage("no HOME: set ANTEROOM_CONFIG_DIR".into()))
}

/// The file in `dir`.
pub fn file(dir: &Path) -> PathBuf {
    dir.join("config.json")
}

/// Reads the saved state; nothing saved yet is the default.
pub fn load(path: &Path) -> CliResult<Saved> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| CliError::Usage(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Saved::default()),
        Err(source) => Err(CliError::File {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// Writes the state: a new file of mode 0600 renamed over the old one, so the token is never
/// readable by others, not even for a moment, and a crash leaves the old file or the new one.
pub fn save(path: &Path, saved: &Saved) -> CliResult<()> {
    let io = |source| CliError::File {
        path: path.display().to_string(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir).map_err(io)?;
    // A name of this process's own: two `ar login`s at once each rename a whole file.
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut f = options.open(&tmp).map_err(io)?;
    let text = serde_json::to_string_pretty(saved).unwrap_or_default();
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_follows_the_override_then_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
        };
        assert_eq!(
            dir(env(&[("ANTEROOM_CONFIG_DIR", "/a"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/a")
        );
        assert_eq!(
            dir(env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])).unwrap(),
            PathBuf::from("/x/anteroom")
        );
        assert_eq!(
            dir(env(&[("HOME", "/h")])).unwrap(),
            PathBuf::from("/h/.config/anteroom")
        );
        assert!(dir(env(&[])).is_err());
    }

    #[test]
    fn saved_state_round_trips_and_only_its_owner_may_read_it() {
        let tmp = tempfile::tempdir().unwrap();
        let path = file(&tmp.path().join("nested"));
        assert_eq!(load(&path).unwrap(), Saved::default());
        let saved = Saved {
            url: Some("http://x".into()),
            username: Some("ann".into()),
            token: Some("t".into()),
            expires_at: None,
        };
        save(&path, &saved).unwrap();
        save(&path, &saved).unwrap();
        assert_eq!(load(&path).unwrap(), saved);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let dir_mode = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode();
            assert_eq!(dir_mode & 0o777, 0o700);
        }
    }
}
