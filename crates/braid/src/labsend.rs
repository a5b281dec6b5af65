//! The `braid-send` and `braid-send-rmtp` modes of `braid lab bench`: one
//! file moved with `braid send` ([`crate::transport`]; MPLOT, or R-MTP
//! with `--transport rmtp`) instead of iperf3's TCP.
//!
//! ```text
//! braid-cli: braid send FILE --path 10.77.0.1 --path 10.77.i.1=10.77.i.2:7400 ...
//!            [--transport rmtp]
//!            (one path per emulated link, each to the proxy's address on it)
//! braid-prx: braid recv --listen 0.0.0.0:7400 --out DIR
//! ```
//! The file is random bytes, sized as the measurement the other modes make
//! (`--duration` seconds at the sum of the path rates) unless a size is
//! given. Goodput is the file's size over the wall-clock time from starting
//! `braid send` to its exit (handshake, slow start and the FIN exchange
//! included: what a user waits for). The mode fails unless both ends print
//! the SHA-256 computed here while the file was written.
//!
//! The issue's MPTCP file transfer baseline is the `mptcp` mode: a bulk
//! transfer over kernel MPTCP (iperf3 under `mptcpize`), whose goodput is
//! what a file copy over MPTCP can reach at best.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use braid_core::crypto::PrivateKey;
use braid_lab::cmd::ns_command;
use braid_lab::topo::{self, NS_CLI, NS_PRX};
use braid_lab::{BenchContext, Direction, Mode, ModeSetup, NsProcess, Transferred};
use sha2::{Digest, Sha256};

use crate::transport::Mode as Transport;

/// The receiver's UDP port in the lab.
pub const PORT: u16 = 7400;
/// Where the mode keeps keys, the file, what arrives and both logs (on
/// disk: a 200 MB file would crowd a tmpfs /run).
pub const WORK_DIR: &str = "/var/tmp/braid-lab-send";
/// The name of the mode sending with MPLOT.
pub const MODE: &str = "braid-send";
/// The name of the mode sending with R-MTP (`--transport rmtp`).
pub const MODE_RMTP: &str = "braid-send-rmtp";

/// The transport of a mode name ([`MODE`], [`MODE_RMTP`]), `None` for
/// any other name.
pub fn transport_of(mode: &str) -> Option<Transport> {
    match mode {
        MODE => Some(Transport::Mplot),
        MODE_RMTP => Some(Transport::Rmtp),
        _ => None,
    }
}
/// The smallest file the mode sends, whatever the run length.
const MIN_BYTES: u64 = 1 << 20;

/// The file size for a run of `duration_s` seconds at `sum_mbit` Mbit/s.
pub fn file_bytes(duration_s: u32, sum_mbit: f64) -> u64 {
    ((duration_s as f64 * sum_mbit * 1e6 / 8.0) as u64).max(MIN_BYTES)
}

/// Writes `bytes` of seeded-from-the-OS random data to `path`; returns
/// their SHA-256.
fn write_random_file(path: &std::path::Path, bytes: u64) -> anyhow::Result<[u8; 32]> {
    use rand_chacha::rand_core::RngCore;
    let mut rng = crate::labtunnel::os_rng()?;
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    let mut sha = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        rng.fill_bytes(&mut buf[..n]);
        sha.update(&buf[..n]);
        f.write_all(&buf[..n])
            .with_context(|| format!("writing {}", path.display()))?;
        left -= n as u64;
    }
    f.flush()?;
    Ok(sha.finalize().into())
}

/// The `braid send` arguments for the lab's paths: path 0 to `--to`, every
/// other from its client address to the proxy's address on the same link.
pub fn path_args(paths: usize) -> Vec<String> {
    let mut v = Vec::new();
    for i in 0..paths {
        v.push("--path".to_string());
        v.push(if i == 0 {
            topo::cli_addr(0).to_string()
        } else {
            format!("{}={}:{PORT}", topo::cli_addr(i), topo::prx_addr(i))
        });
    }
    v
}

/// The SHA-256 (hex) on the first line of `out` that ends in `name`
/// (`sha256sum`'s format, as `braid send`/`recv` print it).
fn digest_line(out: &str, name: &str) -> Option<String> {
    out.lines()
        .filter_map(|l| l.split_once("  "))
        .find(|(h, p)| h.len() == 64 && p.ends_with(name))
        .map(|(h, _)| h.to_string())
}

/// The mode sending with `transport` ([`MODE`] for MPLOT, [`MODE_RMTP`]
/// for R-MTP) and the `braid` executable `exe`; `bytes` fixes the file
/// size (else [`file_bytes`] of the run).
pub fn mode(exe: PathBuf, bytes: Option<u64>, transport: Transport) -> Mode {
    let name = match transport {
        Transport::Mplot => MODE,
        Transport::Rmtp => MODE_RMTP,
    };
    Mode::custom(
        name,
        move |ctx: &BenchContext| -> anyhow::Result<ModeSetup> {
            let dir = PathBuf::from(WORK_DIR);
            let _ = std::fs::remove_dir_all(&dir);
            let inbox = dir.join("in");
            std::fs::create_dir_all(&inbox)
                .with_context(|| format!("creating {}", inbox.display()))?;
            let mut rng = crate::labtunnel::os_rng()?;
            let (rk, sk) = (
                PrivateKey::generate(&mut rng),
                PrivateKey::generate(&mut rng),
            );
            let (rkf, skf) = (dir.join("recv.key"), dir.join("send.key"));
            crate::keygen::write_private_key(&rkf, &rk, true)?;
            crate::keygen::write_private_key(&skf, &sk, true)?;
            let size = bytes.unwrap_or_else(|| {
                file_bytes(ctx.opts.duration_s, ctx.cfg.sum_rate_mbit(Direction::Up))
            });
            let file = dir.join("payload.bin");
            let sha = crate::transport::hex(&write_random_file(&file, size)?);
            let exe_s = exe.to_string_lossy().to_string();
            let recv_log = dir.join("recv.log");
            let mut receiver = NsProcess::spawn(
                NS_PRX,
                &[
                    exe_s.as_str(),
                    "recv",
                    "--listen",
                    &format!("0.0.0.0:{PORT}"),
                    "--out",
                    &inbox.to_string_lossy(),
                    "--key",
                    &rkf.to_string_lossy(),
                    "--allow",
                    &sk.public_key().to_base64(),
                ],
                Some(&recv_log),
            )?;
            // The receiver binds at once; give it that moment so the first
            // handshake is not lost to a port not yet open.
            std::thread::sleep(Duration::from_millis(300));
            if let Some(st) = receiver.try_wait() {
                bail!(
                    "braid recv exited at once ({st}); see {}",
                    recv_log.display()
                );
            }
            let mut send = vec![
                exe_s.clone(),
                "send".into(),
                file.to_string_lossy().to_string(),
                "--to".into(),
                format!("{}:{PORT}", topo::prx_addr(0)),
                "--key".into(),
                skf.to_string_lossy().to_string(),
                "--peer-key".into(),
                rk.public_key().to_base64(),
            ];
            send.extend(path_args(ctx.cfg.paths.len()));
            send.extend(["--transport".to_string(), transport.name().to_string()]);
            // Generous: a tenth of the sum would still finish.
            let limit = Duration::from_secs_f64(
                30.0 + size as f64 * 8.0 / (ctx.cfg.sum_rate_mbit(Direction::Up) * 1e5).max(1.0),
            );
            let transfer = move || -> anyhow::Result<Transferred> {
                let send_log = dir.join("send.log");
                let t0 = Instant::now();
                let mut child = ns_command(NS_CLI, &send)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::fs::File::create(&send_log)?)
                    .spawn()
                    .context("starting braid send")?;
                let pid = child.id() as i32;
                let out = child.stdout.take().expect("piped");
                let reader = std::thread::spawn(move || std::io::read_to_string(out));
                let status = loop {
                    if let Some(s) = child.try_wait()? {
                        break s;
                    }
                    if t0.elapsed() > limit {
                        braid_lab::cmd::stop_pid(pid, Duration::from_secs(1));
                        bail!(
                            "braid send did not finish {size} bytes in {:.0} s; see {}",
                            limit.as_secs_f64(),
                            send_log.display()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(5));
                };
                let seconds = t0.elapsed().as_secs_f64();
                let stdout = reader
                    .join()
                    .map_err(|_| anyhow::anyhow!("reading braid send's output"))??;
                if !status.success() {
                    bail!(
                        "braid send failed ({status}): {}",
                        std::fs::read_to_string(&send_log)
                            .unwrap_or_default()
                            .trim()
                    );
                }
                // The receiver exits once it has renamed the verified file
                // (stopped on drop if it has not within the grace).
                let _ = receiver.wait_timeout(Duration::from_secs(10));
                let rlog = std::fs::read_to_string(&recv_log).unwrap_or_default();
                let sent = digest_line(&stdout, "payload.bin");
                let got = digest_line(&rlog, "payload.bin");
                if sent.as_deref() != Some(sha.as_str()) || got.as_deref() != Some(sha.as_str()) {
                    bail!(
                    "SHA-256 differ: file {sha}, sender printed {sent:?}, receiver {got:?} (see {})",
                    recv_log.display()
                );
                }
                let _ = std::fs::remove_file(inbox.join("payload.bin"));
                let _ = std::fs::remove_file(&file);
                Ok(Transferred {
                    bytes: size,
                    seconds,
                })
            };
            Ok(ModeSetup {
                target: topo::SRV_ADDR,
                bind: None,
                mptcp: false,
                processes: Vec::new(),
                teardown: None,
                transfer: Some(Box::new(transfer)),
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_fills_the_run_at_the_sum_of_the_rates() {
        assert_eq!(file_bytes(15, 20.0), 37_500_000);
        assert_eq!(file_bytes(0, 20.0), MIN_BYTES);
    }

    #[test]
    fn every_path_but_the_first_names_the_proxy_address_on_its_link() {
        let a = path_args(3);
        assert_eq!(
            a,
            [
                "--path",
                "10.77.0.1",
                "--path",
                "10.77.1.1=10.77.1.2:7400",
                "--path",
                "10.77.2.1=10.77.2.2:7400"
            ]
        );
    }

    #[test]
    fn mode_names_choose_the_transport() {
        assert_eq!(transport_of("braid-send"), Some(Transport::Mplot));
        assert_eq!(transport_of("braid-send-rmtp"), Some(Transport::Rmtp));
        assert_eq!(transport_of("braid-pet"), None);
    }

    #[test]
    fn digests_are_read_as_sha256sum_prints_them() {
        let h = "ab".repeat(32);
        let out = format!("noise\n{h}  /var/tmp/x/in/payload.bin\n");
        assert_eq!(digest_line(&out, "payload.bin"), Some(h));
        assert_eq!(digest_line("short  payload.bin", "payload.bin"), None);
    }
}
