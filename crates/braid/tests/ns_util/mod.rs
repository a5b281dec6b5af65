//! Fixtures shared by the tests that run this build's binary in network
//! namespaces (root): running a command, and a guard that stops the
//! daemons and removes the namespaces and files of one run when it drops.

// Each test file uses the part it needs.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use braid_lab::preflight::{ensure, Lookup, Tool};

/// Whether this test can run here: root, a TUN device, and `tools`
/// (installed with apt-get when missing, as `braid lab` does).
pub fn can_run(tools: &[Tool]) -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("no /dev/net/tun".into());
    }
    ensure(tools, &Lookup::from_env(), None)
}

/// Panics, saying why and how to fix it, unless the lab can run here
/// (root, namespaces, the lab's tools) with `extra` tools as well.
pub fn require_lab(extra: &[Tool]) {
    if let Err(why) = braid_lab::topo::check_environment() {
        panic!("the lab cannot run here: {why} (run as root; `bash .ci/run` installs the tools)");
    }
    if let Err(why) = ensure(extra, &Lookup::from_env(), None) {
        panic!("{why} (`bash .ci/run` installs it)");
    }
}

/// Brings up the shipped lab file `name` with this build's emulator
/// (holding the lab lock), runs `f` with its config and the `braid`
/// executable, and tears the lab down whether `f` returns or panics.
pub fn with_shipped_lab<T>(
    name: &str,
    f: impl FnOnce(&braid_lab::LabConfig, &std::path::Path) -> T + std::panic::UnwindSafe,
) -> T {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_braid"));
    let cfg = braid_lab::shipped(name).unwrap();
    let _lock = braid_lab::topo::LabLock::acquire().unwrap();
    braid_lab::up(
        &cfg,
        &braid_lab::EmulatorCommand::new(&exe).with_args(["lab", "emulate"]),
    )
    .unwrap();
    let result = std::panic::catch_unwind(|| f(&cfg, &exe));
    braid_lab::down().unwrap();
    result.unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// `braid status --json` of the daemon behind control socket `socket`,
/// or `None` while it does not answer.
pub fn status(braid: &str, socket: &std::path::Path) -> Option<serde_json::Value> {
    let o = sh(&[
        braid,
        "status",
        "--json",
        "--socket",
        socket.to_str().unwrap(),
    ]);
    if !o.status.success() {
        return None;
    }
    serde_json::from_slice(&o.stdout).ok()
}

/// Polls `f` every 20 ms until it holds; panics naming `what` after
/// `timeout`.
pub fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}");
}

/// The value of environment variable `name`, or `default` when it is
/// unset or does not parse.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `args` (program first) and returns what it did.
pub fn sh(args: &[&str]) -> Output {
    Command::new(args[0]).args(&args[1..]).output().unwrap()
}

/// Runs `args`, failing the test with its stderr if it fails; returns
/// its stdout.
pub fn ok(args: &[&str]) -> String {
    let o = sh(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Writes a new private key to `dir/name` with `braid keygen` (this
/// build's binary `braid`) and returns the public key.
pub fn keygen(braid: &str, dir: &std::path::Path, name: &str) -> String {
    ok(&[braid, "keygen", "--out", dir.join(name).to_str().unwrap()])
        .trim()
        .to_string()
}

/// Namespaces, daemons and files of one run; removed on drop.
pub struct Lab {
    pub namespaces: Vec<String>,
    pub dir: PathBuf,
    pub children: Vec<Child>,
}

impl Lab {
    pub fn new(namespaces: Vec<String>, dir: PathBuf) -> Lab {
        Lab {
            namespaces,
            dir,
            children: Vec::new(),
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = sh(&["kill", &c.id().to_string()]);
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            let _ = sh(&["ip", "netns", "del", ns]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Loads `script` into nftables inside namespace `ns` (`nft -f -`).
pub fn nft(ns: &str, script: &str) {
    let mut child = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("nft");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "nft failed: {script}");
}

/// Kills the child when dropped, so a failing test leaves nothing running.
pub struct Reap(pub Option<std::process::Child>);

impl Reap {
    pub fn output(mut self) -> String {
        let out = self.0.take().unwrap().wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Receives one connection, prints the SHA-256 and byte count of what came.
const SINK: &str = r#"
import hashlib, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); s.settimeout(60)
c, _ = s.accept(); c.settimeout(60); h = hashlib.sha256(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    h.update(b); n += len(b)
print(h.hexdigest(), n, flush=True)
"#;

/// Sends `n` pseudo-random bytes from the tunnel address, prints their
/// SHA-256. An optional fifth argument names the congestion control.
const SOURCE: &str = r#"
import hashlib, socket, sys
dst, port, src, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
import time
for attempt in range(50):
    try:
        c = socket.create_connection((dst, port), timeout=60, source_address=(src, 0)); break
    except OSError:
        time.sleep(0.2)
if len(sys.argv) > 5:
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[5].encode())
h = hashlib.sha256(); block = hashlib.sha256(b"braid").digest() * 2048; sent = 0; i = 0
while sent < n:
    b = hashlib.sha256(i.to_bytes(8, "big")).digest() + block[: min(len(block), n - sent - 32)]
    b = b[: n - sent]; c.sendall(b); h.update(b); sent += len(b); i += 1
c.shutdown(socket.SHUT_WR); c.recv(1); print(h.hexdigest(), sent, flush=True)
"#;

/// Starts the sink on `port` in the server namespace and gives it half a
/// second to listen.
pub fn start_sink(port: u16) -> Reap {
    let sink = Reap(Some(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                braid_lab::topo::NS_SRV,
                "python3",
                "-c",
                SINK,
            ])
            .arg(port.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    std::thread::sleep(Duration::from_millis(500));
    sink
}

/// Starts the source of `bytes` in the client namespace, sending from the
/// tunnel address to the server's `port`, with congestion control `cc`
/// if given.
pub fn start_source(port: u16, bytes: u64, cc: Option<&str>) -> Reap {
    Reap(Some(
        Command::new("ip")
            .args([
                "netns",
                "exec",
                braid_lab::topo::NS_CLI,
                "python3",
                "-c",
                SOURCE,
            ])
            .args([
                braid_lab::topo::SRV_ADDR.to_string(),
                port.to_string(),
                braid::labtunnel::CLIENT_TUNNEL_ADDR.to_string(),
                bytes.to_string(),
            ])
            .args(cc)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    ))
}

/// Bytes the client namespace has sent on path `i`'s interface.
pub fn tx_bytes(i: usize) -> u64 {
    tx_bytes_in(braid_lab::topo::NS_CLI, &braid_lab::topo::path_if(i))
}

/// Bytes namespace `ns` has sent on its interface `dev`.
pub fn tx_bytes_in(ns: &str, dev: &str) -> u64 {
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "cat"])
        .arg(format!("/sys/class/net/{dev}/statistics/tx_bytes"))
        .output()
        .expect("ip netns exec");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("tx_bytes is a number")
}
