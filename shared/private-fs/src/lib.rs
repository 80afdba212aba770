//! Files and directories only their owner may read: mode 0700 (directories) and 0600 (files) on
//! unix; elsewhere the platform's defaults. Used for what must not be readable by other local
//! users — the local Hub's data directory, master key and database, the CLI's replay caches and
//! the MCP server's ledger (titles of asks that may be sensitive).
//!
//! Each helper narrows an existing path too: `OpenOptions::mode` and `DirBuilder::mode` apply only
//! when they create, so a file or directory left wider by an older version (or a umask) would
//! otherwise stay wide.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Mode of a private directory.
pub const DIR_MODE: u32 = 0o700;
/// Mode of a private file.
pub const FILE_MODE: u32 = 0o600;

/// Create `dir` and its parents (each new one 0700), then narrow `dir` itself to 0700.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, DIR_MODE);
    builder.create(dir)?;
    restrict(dir, DIR_MODE)
}

/// Open `path` for writing, truncated (created 0600, an existing file narrowed to 0600).
pub fn create_file(path: &Path) -> io::Result<File> {
    let mut opts = OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    open(&mut opts, path)
}

/// Create `path` empty if missing, leaving its contents; 0600 either way.
pub fn touch_file(path: &Path) -> io::Result<()> {
    let mut opts = OpenOptions::new();
    opts.append(true).create(true);
    open(&mut opts, path).map(drop)
}

/// Write `contents` to `path` (0600), flushed to disk before returning.
pub fn write_file(path: &Path, contents: &[u8]) -> io::Result<()> {
    let mut f = create_file(path)?;
    f.write_all(contents)?;
    f.sync_all()
}

/// Narrow `path` to `mode` (unix; a no-op elsewhere).
pub fn restrict(path: &Path, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(())
    }
}

fn open(opts: &mut OpenOptions, path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(opts, FILE_MODE);
    let file = opts.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    }
    Ok(file)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_directories_and_files_are_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_dir(&dir).unwrap();
        assert_eq!((mode(&tmp.path().join("a")), mode(&dir)), (DIR_MODE, DIR_MODE));
        let file = dir.join("key");
        write_file(&file, b"secret").unwrap();
        assert_eq!(mode(&file), FILE_MODE);
        assert_eq!(std::fs::read(&file).unwrap(), b"secret");
    }

    #[test]
    fn existing_wide_paths_are_narrowed_and_touch_keeps_contents() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("wide");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), DIR_MODE);

        let file = dir.join("db");
        std::fs::write(&file, b"rows").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        touch_file(&file).unwrap();
        assert_eq!((mode(&file), std::fs::read(&file).unwrap()), (FILE_MODE, b"rows".to_vec()));

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        create_file(&file).unwrap().write_all(b"new").unwrap();
        assert_eq!((mode(&file), std::fs::read(&file).unwrap()), (FILE_MODE, b"new".to_vec()));
    }
}
