//! The data directory is private (issue 13 item 13): the database and its WAL, the keys and
//! `dev.env` are readable by the owner only, and a restart narrows files an older build left open.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use support::*;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

#[test]
fn data_files_are_owner_only() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let agent = admin_json(&data, &["create-agent", "--account", "acme", "--agent", "bot"]);
    let hub = Hub::start(&data);
    let (status, _) = submit(&hub, agent["api_key"].as_str().unwrap(), &notify_envelope());
    assert_eq!(status, 202);
    assert_eq!(mode(&data), 0o700, "the data directory");
    for name in ["hub.db", "hub.db-wal", "master.key", "ed25519.seed", "dev.env"] {
        assert_eq!(mode(&data.join(name)), 0o600, "{name}");
    }
    drop(hub);
    // an older build's 0644 database is narrowed at the next start
    std::fs::set_permissions(data.join("hub.db"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let _hub = Hub::start(&data);
    assert_eq!(mode(&data.join("hub.db")), 0o600);
}
