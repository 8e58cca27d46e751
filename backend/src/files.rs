//! Files Anteroom keeps in its data directory hold secrets (the signing key, a generated admin
//! password, the SQLite database with password hashes): they are created owner-only, and
//! written so that a crash never leaves a half-written or empty file behind.

use std::io::Write;
use std::path::Path;

/// Creates `dir` (and missing parents) owner-only (0700) when it does not exist. An existing
/// directory keeps its permissions — it may be a volume someone else set up — but one that
/// others can read gets a warning.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        if let Ok(meta) = std::fs::metadata(dir)
            && meta.is_dir()
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                path = %dir.display(),
                mode = format!("{:o}", meta.permissions().mode() & 0o777),
                "the data directory is readable by other users; chmod 700 it"
            );
        }
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Writes `contents` to `path` owner-only (0600), atomically: into a temporary file beside it
/// that is renamed over `path` only once complete, so readers see the old file or the new one,
/// never an empty one.
pub fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mut tmp = tempfile_in(dir, path)?;
    let result = (|| {
        tmp.1.write_all(contents.as_bytes())?;
        tmp.1.sync_all()?;
        std::fs::rename(&tmp.0, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp.0);
    }
    result
}

/// Restricts an existing file to its owner (drops every group and other bit); a missing file
/// is fine.
pub fn restrict_to_owner(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::metadata(path) {
            Ok(meta) => {
                let mode = meta.permissions().mode();
                if mode & 0o077 != 0 {
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))?;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Creates `path` empty and owner-only unless it exists (then it is only restricted).
pub fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)?;
    restrict_to_owner(path)
}

fn tempfile_in(dir: &Path, target: &Path) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let tmp = dir.join(format!(".{name}.{:016x}.tmp", rand::random::<u64>()));
    let file = opts.open(&tmp)?;
    Ok((tmp, file))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_created_data_directory_is_owner_only() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/data");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_private_file_is_owner_only_and_replaced_whole() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("secret");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode(&path), 0o600);
        let leftovers: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn an_existing_world_readable_file_is_restricted_to_its_owner() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("anteroom.db");
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        create_private_file(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
    }
}
