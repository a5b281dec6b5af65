//! `braid send` and `braid recv`: the command-line face of
//! [`braid::transport`].

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use braid::transport::{self, hex, Listener, Path, ReceiveOptions, SendOptions};
use braid_core::crypto::PublicKey;
use clap::Args;

/// `braid send FILE --to HOST:PORT --path A --path B --key FILE --peer-key KEY`
#[derive(Args, Debug)]
pub struct SendArgs {
    /// The file to send.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The receiver, where `braid recv --listen` runs (host name or address, and port).
    #[arg(long, value_name = "HOST:PORT")]
    pub to: String,
    /// A path: a local address to send from (192.168.1.5) or an interface
    /// (wlan0; needs root or CAP_NET_RAW), optionally `=HOST:PORT`, another
    /// address of the receiver this path sends to instead of --to (a
    /// multihomed receiver). Repeat for each path, 1 to 16.
    #[arg(
        long = "path",
        value_name = "IFACE_OR_ADDR[=HOST:PORT]",
        required = true
    )]
    pub paths: Vec<String>,
    /// This sender's private key file (`braid keygen --out FILE`; mode 0600).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// The receiver's public key (the line `braid keygen` printed there).
    #[arg(long, value_name = "BASE64")]
    pub peer_key: String,
    /// Seconds to wait for the receiver's handshake reply before giving up.
    #[arg(long, default_value_t = 10, value_name = "SECONDS")]
    pub handshake_timeout: u64,
    /// The transport: `mplot` (block FEC across paths, loss-driven
    /// windows) or `rmtp` (R-MTP: paced rates from packet pairs, cut only
    /// when one-way delay grows, so random wireless loss does not slow it).
    /// The receiver follows whichever the sender uses.
    #[arg(long, default_value = "mplot", value_name = "MODE", value_parser = parse_mode)]
    pub transport: transport::Mode,
    /// No progress line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

fn parse_mode(s: &str) -> Result<transport::Mode, String> {
    s.parse()
}

/// `braid recv --listen ADDR --key FILE --allow KEY [--out DIR]`; takes
/// MPLOT or R-MTP, as the sender chooses.
#[derive(Args, Debug)]
pub struct RecvArgs {
    /// Address and UDP port to listen on, e.g. 0.0.0.0:7400.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// Directory the file is stored in (under its sender-side name; an
    /// existing file is never overwritten).
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub out: PathBuf,
    /// This receiver's private key file (`braid keygen --out FILE`; mode 0600).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// A sender's public key allowed to send; repeat for several senders.
    #[arg(long, value_name = "BASE64", required = true)]
    pub allow: Vec<String>,
    /// Keep receiving files one after another instead of exiting after the first.
    #[arg(long)]
    pub keep: bool,
    /// No progress line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}

fn public_key(text: &str, flag: &str) -> Result<PublicKey> {
    PublicKey::from_base64(text.trim())
        .map_err(|e| anyhow!("{flag} {text:?}: {e}; paste the public key `braid keygen` printed"))
}

fn resolve(hp: &str, what: &str) -> Result<SocketAddr> {
    hp.to_socket_addrs()
        .with_context(|| format!("{what}: {hp:?} is not HOST:PORT of the receiver"))?
        .next()
        .ok_or_else(|| anyhow!("{what}: {hp} has no address"))
}

pub fn send(a: SendArgs) -> Result<()> {
    let to =
        a.to.to_socket_addrs()
            .with_context(|| format!("--to {}: give HOST:PORT of the receiver", a.to))?
            .next()
            .ok_or_else(|| anyhow!("--to {}: the name has no address", a.to))?;
    let mut paths = Vec::new();
    let mut path_to = Vec::new();
    for p in &a.paths {
        let (local, remote) = match p.split_once('=') {
            Some((l, r)) => (l, Some(resolve(r, &format!("--path {p}"))?)),
            None => (p.as_str(), None),
        };
        paths.push(
            local
                .parse::<Path>()
                .map_err(|e| anyhow!("--path {p}: {e}"))?,
        );
        path_to.push(remote);
    }
    let key = braid::config::load_private_key(&a.key, "--key")?;
    let mut o = SendOptions::new(to, paths, key, public_key(&a.peer_key, "--peer-key")?);
    o.path_to = path_to;
    o.handshake_timeout = Duration::from_secs(a.handshake_timeout.max(1));
    o.progress = !a.quiet;
    o.mode = a.transport;
    let s = transport::send_file(&a.file, &o)?;
    let secs = s.elapsed.as_secs_f64();
    eprintln!(
        "sent {} bytes with {} in {secs:.2} s ({:.1} Mb/s); bytes on each path: {:?}; {} packets, {} lost, {} timeouts",
        s.bytes,
        a.transport.name(),
        s.bytes as f64 * 8e-6 / secs.max(1e-9),
        s.path_bytes,
        s.packets,
        s.lost,
        s.timeouts
    );
    println!("{}  {}", hex(&s.sha256), a.file.display());
    Ok(())
}

pub fn recv(a: RecvArgs) -> Result<()> {
    let key = braid::config::load_private_key(&a.key, "--key")?;
    let allow = a
        .allow
        .iter()
        .map(|k| public_key(k, "--allow"))
        .collect::<Result<Vec<_>>>()?;
    let mut o = ReceiveOptions::new(a.listen, a.out, key, allow);
    o.progress = !a.quiet;
    let mut l = Listener::bind(o)?;
    if !a.quiet {
        eprintln!("braid recv: listening on {}", l.local_addr());
    }
    loop {
        match l.accept(None) {
            Ok(r) => {
                let secs = r.elapsed.as_secs_f64();
                eprintln!(
                    "received {} bytes in {secs:.2} s ({:.1} Mb/s)",
                    r.bytes,
                    r.bytes as f64 * 8e-6 / secs.max(1e-9)
                );
                println!("{}  {}", hex(&r.sha256), r.path.display());
            }
            Err(e) if a.keep => eprintln!("braid recv: error: {e}"),
            Err(e) => bail!(e),
        }
        if !a.keep {
            return Ok(());
        }
    }
}
