//! `braid::transport` over loopback: no root needed, every path a
//! 127.0.0.1 socket of its own.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use braid::transport::{
    hex, send_file, Listener, Path, ReceiveOptions, Received, SendOptions, TransferError,
};
use braid_core::crypto::PrivateKey;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use sha2::{Digest, Sha256};

fn key(seed: u64) -> PrivateKey {
    PrivateKey::generate(&mut ChaCha20Rng::seed_from_u64(seed))
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("braid-transport-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("out")).unwrap();
    d
}

fn file(dir: &std::path::Path, len: usize) -> (PathBuf, [u8; 32]) {
    let mut data = vec![0u8; len];
    ChaCha20Rng::seed_from_u64(len as u64).fill_bytes(&mut data);
    let p = dir.join("payload.bin");
    std::fs::write(&p, &data).unwrap();
    (p, Sha256::digest(&data).into())
}

fn loopback_paths(n: usize) -> Vec<Path> {
    vec![Path::Addr("127.0.0.1".parse().unwrap()); n]
}

/// Starts a receiver for one file on a free port, in a thread.
fn receiver(
    dir: &std::path::Path,
    rkey: &PrivateKey,
    allow: &PrivateKey,
    wait: Duration,
) -> (
    std::net::SocketAddr,
    std::thread::JoinHandle<Result<Received, TransferError>>,
) {
    receiver_on("127.0.0.1:0", dir, rkey, allow, wait)
}

fn receiver_on(
    listen: &str,
    dir: &std::path::Path,
    rkey: &PrivateKey,
    allow: &PrivateKey,
    wait: Duration,
) -> (
    std::net::SocketAddr,
    std::thread::JoinHandle<Result<Received, TransferError>>,
) {
    let o = ReceiveOptions::new(
        listen.parse().unwrap(),
        dir.join("out"),
        rkey.clone(),
        vec![allow.public_key()],
    );
    let mut l = Listener::bind(o).unwrap();
    let addr = l.local_addr();
    (addr, std::thread::spawn(move || l.accept(Some(wait))))
}

/// A few MB over three loopback paths arrive with the same SHA-256,
/// under the final name, with no temporary file left.
#[test]
fn a_file_crosses_three_paths_intact() {
    let dir = tempdir("ok");
    let (src, digest) = file(&dir, 3_000_000 + 1234);
    let (skey, rkey) = (key(1), key(2));
    let (addr, rx) = receiver(&dir, &rkey, &skey, Duration::from_secs(30));
    let o = SendOptions::new(addr, loopback_paths(3), skey.clone(), rkey.public_key());
    let sent = send_file(&src, &o).unwrap_or_else(|e| panic!("{e}"));
    let got = rx.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{sent:?}");
    assert_eq!(sent.sha256, digest);
    assert_eq!(got.sha256, digest, "{}", hex(&got.sha256));
    assert_eq!(got.bytes, 3_001_234);
    assert_eq!(got.from, skey.public_key());
    let stored = std::fs::read(dir.join("out/payload.bin")).unwrap();
    assert_eq!(<[u8; 32]>::from(Sha256::digest(&stored)), digest);
    let names: Vec<_> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("payload.bin")]);
    // Every path carried part of it.
    assert!(
        sent.path_bytes.iter().all(|&b| b > 0),
        "{:?}",
        sent.path_bytes
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same over R-MTP (`--transport rmtp`): the receiver takes the mode
/// from the first frame, the file arrives with the same SHA-256, and every
/// path carried part of it.
#[test]
fn a_file_crosses_two_paths_intact_over_rmtp() {
    let dir = tempdir("rmtp");
    let (src, digest) = file(&dir, 2_000_000 + 777);
    let (skey, rkey) = (key(11), key(12));
    let (addr, rx) = receiver(&dir, &rkey, &skey, Duration::from_secs(30));
    let mut o = SendOptions::new(addr, loopback_paths(2), skey.clone(), rkey.public_key());
    o.mode = braid::transport::Mode::Rmtp;
    let sent = send_file(&src, &o).unwrap_or_else(|e| panic!("{e}"));
    let got = rx.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{sent:?}");
    assert_eq!(sent.sha256, digest);
    assert_eq!(got.sha256, digest, "{}", hex(&got.sha256));
    assert_eq!(got.bytes, 2_000_777);
    let stored = std::fs::read(dir.join("out/payload.bin")).unwrap();
    assert_eq!(<[u8; 32]>::from(Sha256::digest(&stored)), digest);
    assert!(
        sent.path_bytes.iter().all(|&b| b > 0),
        "{:?}",
        sent.path_bytes
    );
    // R-MTP frames, not MPLOT packets: about 1278 bytes each on the path.
    let frames = 2_000_777u64.div_ceil(1200);
    assert!(sent.packets >= frames, "{sent:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sender whose key the receiver does not allow gets no reply (as the
/// tunnel) and says so; the receiver names the refused handshake.
#[test]
fn a_wrong_key_is_refused() {
    let dir = tempdir("key");
    let (src, _) = file(&dir, 1000);
    let (skey, rkey, other) = (key(3), key(4), key(5));
    let (addr, rx) = receiver(&dir, &rkey, &other, Duration::from_secs(3));
    let mut o = SendOptions::new(addr, loopback_paths(2), skey, rkey.public_key());
    o.handshake_timeout = Duration::from_secs(2);
    let e = send_file(&src, &o).unwrap_err();
    assert!(matches!(e, TransferError::NoReply { .. }), "{e}");
    assert!(e.to_string().contains("--peer-key"), "{e}");
    let e = rx.join().unwrap().unwrap_err().to_string();
    assert!(e.contains("refused") && e.contains("client"), "{e}");
    assert_eq!(std::fs::read_dir(dir.join("out")).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Nobody listening: the handshake times out with a clear error.
#[test]
fn an_unreachable_receiver_times_out() {
    let dir = tempdir("gone");
    let (src, _) = file(&dir, 1000);
    // A port bound and never read from: nothing answers.
    let quiet = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut o = SendOptions::new(
        quiet.local_addr().unwrap(),
        loopback_paths(1),
        key(6),
        key(7).public_key(),
    );
    o.handshake_timeout = Duration::from_secs(1);
    let t = std::time::Instant::now();
    let e = send_file(&src, &o).unwrap_err();
    assert!(matches!(e, TransferError::NoReply { .. }), "{e}");
    assert!(e.to_string().contains("within 1 s"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The receiver refuses a file that exists already, before any byte moves.
#[test]
fn an_existing_file_is_not_overwritten() {
    let dir = tempdir("exists");
    let (src, _) = file(&dir, 1000);
    std::fs::write(dir.join("out/payload.bin"), b"keep me").unwrap();
    let (skey, rkey) = (key(8), key(9));
    let (addr, rx) = receiver(&dir, &rkey, &skey, Duration::from_secs(3));
    let o = SendOptions::new(addr, loopback_paths(1), skey, rkey.public_key());
    let e = send_file(&src, &o).unwrap_err();
    assert!(
        matches!(e, TransferError::Refused(ref m) if m.contains("already exists")),
        "{e}"
    );
    assert!(rx.join().unwrap().is_err());
    assert_eq!(
        std::fs::read(dir.join("out/payload.bin")).unwrap(),
        b"keep me"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--help` of both commands says what to give.
#[test]
fn help_texts() {
    let bin = env!("CARGO_BIN_EXE_braid");
    let send = Command::new(bin).args(["send", "--help"]).output().unwrap();
    let s = String::from_utf8(send.stdout).unwrap();
    for w in [
        "--to",
        "--path",
        "--key",
        "--peer-key",
        "IFACE_OR_ADDR",
        "SHA-256",
        "--transport",
        "rmtp",
    ] {
        assert!(s.contains(w), "send --help lacks {w}:\n{s}");
    }
    let recv = Command::new(bin).args(["recv", "--help"]).output().unwrap();
    let r = String::from_utf8(recv.stdout).unwrap();
    for w in ["--listen", "--out", "--allow", "--key", "SHA-256"] {
        assert!(r.contains(w), "recv --help lacks {w}:\n{r}");
    }
    // Missing required options are named.
    let bad = Command::new(bin).args(["send", "x"]).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--to"));
}

/// A file that grows while it is sent is discarded on both sides.
#[test]
fn a_file_changed_while_sent_is_discarded() {
    let dir = tempdir("changed");
    let (src, _) = file(&dir, 8_000_000);
    let (skey, rkey) = (key(10), key(11));
    let (addr, rx) = receiver(&dir, &rkey, &skey, Duration::from_secs(30));
    let o = SendOptions::new(addr, loopback_paths(2), skey, rkey.public_key());
    let grow = src.clone();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(grow).unwrap();
        f.write_all(b"more").unwrap();
    });
    let e = send_file(&src, &o).unwrap_err();
    writer.join().unwrap();
    assert!(matches!(e, TransferError::Changed(_)), "{e}");
    let r = rx.join().unwrap().unwrap_err().to_string();
    assert!(r.contains("changed while it was sent"), "{r}");
    assert_eq!(std::fs::read_dir(dir.join("out")).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Paths may go to different addresses of a multihomed receiver.
#[test]
fn paths_reach_a_multihomed_receiver() {
    let dir = tempdir("multi");
    let (src, digest) = file(&dir, 500_000);
    let (skey, rkey) = (key(12), key(13));
    let (addr, rx) = receiver_on("0.0.0.0:0", &dir, &rkey, &skey, Duration::from_secs(30));
    let port = addr.port();
    let mut o = SendOptions::new(
        format!("127.0.0.1:{port}").parse().unwrap(),
        loopback_paths(2),
        skey,
        rkey.public_key(),
    );
    o.path_to = vec![None, Some(format!("127.0.0.2:{port}").parse().unwrap())];
    let sent = send_file(&src, &o).unwrap_or_else(|e| panic!("{e}"));
    let got = rx.join().unwrap().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got.sha256, digest);
    assert!(
        sent.path_bytes.iter().all(|&b| b > 0),
        "{:?}",
        sent.path_bytes
    );
    let _ = std::fs::remove_dir_all(&dir);
}
