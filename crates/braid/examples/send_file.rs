//! Sends a file to a receiver in the same process over two loopback
//! paths with `braid::transport`, and prints both sides' SHA-256.
//!
//! `cargo run -p braid --example send_file -- FILE` (default: this
//! example's own source). Between two hosts, the receiver runs
//! `Listener::bind(..)?.accept(None)` (or `braid recv`) and the sender
//! gives each path's local address or interface in `SendOptions::paths`.

use std::path::PathBuf;

use braid::transport::{hex, send_file, Listener, Path, ReceiveOptions, SendOptions};
use braid_core::crypto::PrivateKey;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let file = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(file!()));
    // Keys as `braid keygen` makes them; real use loads them from key files
    // (`braid::config::load_private_key`).
    let mut rng = ChaCha20Rng::from_entropy();
    let (sender_key, receiver_key) = (
        PrivateKey::generate(&mut rng),
        PrivateKey::generate(&mut rng),
    );
    let out = std::env::temp_dir().join(format!("braid-example-{}", std::process::id()));
    std::fs::create_dir_all(&out)?;

    let mut listener = Listener::bind(ReceiveOptions::new(
        "127.0.0.1:0".parse()?,
        out.clone(),
        receiver_key.clone(),
        vec![sender_key.public_key()],
    ))?;
    let to = listener.local_addr();
    let rx = std::thread::spawn(move || listener.accept(Some(std::time::Duration::from_secs(30))));

    let loopback: Path = "127.0.0.1".parse()?;
    let mut o = SendOptions::new(
        to,
        vec![loopback.clone(), loopback],
        sender_key,
        receiver_key.public_key(),
    );
    o.progress = true;
    let sent = send_file(&file, &o)?;
    let got = rx.join().expect("receiver thread")?;
    println!("sent     {}  {}", hex(&sent.sha256), file.display());
    println!("received {}  {}", hex(&got.sha256), got.path.display());
    println!("bytes on each path: {:?}", sent.path_bytes);
    std::fs::remove_dir_all(&out)?;
    Ok(())
}
