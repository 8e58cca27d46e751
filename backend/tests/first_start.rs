//! The `anteroom` binary's first start as `./anteroom.sh run` makes it: it prints the address it
//! really listens on (the script does not guess it), and it generates the first admin's password
//! itself (no Python in the script), prints it and keeps it owner-only in the data directory.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A server process that is killed when the test ends, also on failure.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `anteroom serve` on `listen` in `dir` with nothing from the test's environment, and
/// returns it with the stdout lines printed up to the "serving" line.
fn start(dir: &std::path::Path, listen: &str) -> (Server, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args(["serve", "--listen", listen, "--data-dir"])
        .arg(dir.join("data"))
        .current_dir(dir)
        .env_clear()
        .env("ANTEROOM_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the anteroom binary");
    let stdout = child.stdout.take().expect("stdout");
    let server = Server(child);
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("a line");
        let serving = line.starts_with("Anteroom is serving on ");
        lines.push(line);
        if serving {
            return (server, lines);
        }
    }
    panic!("the server ended before saying where it serves: {lines:?}");
}

#[test]
fn the_first_start_prints_the_real_address_and_the_generated_password_which_it_keeps_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // Port 0: only the server knows the port it got, so only a printed real address is right.
    let (server, lines) = start(dir.path(), "127.0.0.1:0");
    let serving = lines.last().unwrap();
    let address = serving
        .strip_prefix("Anteroom is serving on http://")
        .expect("an http address");
    assert!(
        !address.ends_with(":0"),
        "the bound port, not the asked-for 0: {serving}"
    );
    std::net::TcpStream::connect(address).expect("the printed address accepts connections");

    let password_line = lines
        .iter()
        .find(|l| l.starts_with("Created the first admin."))
        .unwrap_or_else(|| panic!("the generated password is printed: {lines:?}"));
    let password = password_line.rsplit(' ').next().unwrap();
    assert!(password.len() >= 20, "{password_line}");
    let file = dir.path().join("data/admin-password");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), password);
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::metadata(dir.path().join("data")).unwrap().permissions().mode() & 0o777,
        0o700
    );
    drop(server);

    let (_again, lines) = start(dir.path(), "127.0.0.1:0");
    assert!(
        !lines.iter().any(|l| l.starts_with("Created the first admin.")),
        "the second start creates no admin: {lines:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap().trim(),
        password,
        "the kept password is left alone"
    );
}

#[test]
fn a_start_that_cannot_listen_creates_no_admin_and_the_next_start_reports_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_anteroom"))
        .args(["serve", "--listen", &address, "--data-dir"])
        .arg(dir.path().join("data"))
        .current_dir(dir.path())
        .env_clear()
        .env("ANTEROOM_LOG", "off")
        .output()
        .expect("run the anteroom binary");
    assert!(!out.status.success(), "the port is taken");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("Created the first admin"), "{stdout}");
    assert!(!dir.path().join("data/admin-password").exists());
    drop(taken);

    let (_server, lines) = start(dir.path(), "127.0.0.1:0");
    assert!(
        lines.iter().any(|l| l.starts_with("Created the first admin.")),
        "the first start that can serve creates the admin: {lines:?}"
    );
}
