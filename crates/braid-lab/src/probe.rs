//! Reachability checks from inside a lab namespace without any external
//! program.
//!
//! Why not `ping`: a probe that shells out confuses "the program could not
//! be started" (not installed, not on `PATH`) with "the network does not
//! answer", and the lab would then report a working tunnel as down. Here a
//! thread of this process enters the namespace itself (`setns(2)` on
//! `/run/netns/<ns>`, which affects only the calling thread) and opens a
//! TCP connection to the target. Both a completed connection and a refusal
//! (the target's kernel answering with a RST because nothing listens on
//! the port) prove that packets went there and back; only silence or an
//! unreachable error count as "not reachable". Errors that are not about
//! the network (no such namespace, no permission) are reported as such.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use socket2::{Domain, Protocol, Socket, Type};

/// Port probed on the target: TCP discard. Nothing needs to listen there;
/// a refusal is an answer.
pub const PROBE_PORT: u16 = 9;

/// Outcome of one probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The target answered (accepted or refused the connection).
    Answered,
    /// No answer within the timeout, or the network said unreachable.
    NoAnswer,
    /// The source address is not (yet) configured here, e.g. a tunnel
    /// interface that its daemon has not brought up.
    NoSource,
}

/// Run `f` on a new thread that has entered the network namespace `ns`.
/// Setup failures (missing namespace, no permission) are errors, never a
/// network outcome.
pub fn in_namespace<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    let path = format!("/run/netns/{ns}");
    let file = std::fs::File::open(&path)
        .with_context(|| format!("opening {path} (is namespace {ns} there?)"))?;
    std::thread::Builder::new()
        .name(format!("netns-{ns}"))
        .spawn(move || {
            // SAFETY: setns on an open namespace file descriptor we own; it
            // changes only this (short-lived, dedicated) thread's network
            // namespace.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("entering namespace {path}"));
            }
            f()
        })
        .context("spawning the namespace thread")?
        .join()
        .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))?
}

/// One TCP connection attempt to `dst:port` from `src` (if given), inside
/// the calling thread's namespace.
pub fn tcp_probe(
    src: Option<Ipv4Addr>,
    dst: Ipv4Addr,
    port: u16,
    timeout: Duration,
) -> anyhow::Result<Probe> {
    let sock = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
        .context("creating a TCP socket")?;
    if let Some(s) = src {
        match sock.bind(&SocketAddr::V4(SocketAddrV4::new(s, 0)).into()) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => return Ok(Probe::NoSource),
            Err(e) => return Err(e).with_context(|| format!("binding the probe to {s}")),
        }
    }
    let to = SocketAddr::V4(SocketAddrV4::new(dst, port));
    match sock.connect_timeout(&to.into(), timeout) {
        Ok(()) => Ok(Probe::Answered),
        Err(e) => match e.kind() {
            std::io::ErrorKind::ConnectionRefused => Ok(Probe::Answered),
            _ if matches!(
                e.raw_os_error(),
                Some(libc::ETIMEDOUT)
                    | Some(libc::EHOSTUNREACH)
                    | Some(libc::ENETUNREACH)
                    | Some(libc::EINPROGRESS)
                    | Some(libc::EAGAIN)
            ) || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                Ok(Probe::NoAnswer)
            }
            _ => Err(e).with_context(|| format!("probing {to}")),
        },
    }
}

/// Wait until `dst` answers a TCP probe from namespace `ns` (optionally
/// from source `src`), e.g. once a tunnel is up, or fail after `timeout`.
/// The whole wait runs in one thread inside the namespace.
pub fn wait_reachable(
    ns: &str,
    src: Option<Ipv4Addr>,
    dst: Ipv4Addr,
    timeout: Duration,
) -> anyhow::Result<()> {
    let ns_name = ns.to_string();
    in_namespace(ns, move || {
        let t0 = Instant::now();
        loop {
            let left = timeout.saturating_sub(t0.elapsed());
            // Each attempt waits up to 3 s: a bond whose every path is
            // far (two 270-290 ms paths one way) answers after more than
            // a second, the SYN's own retransmission included, and a
            // shorter attempt gave up on every answer.
            let once = left.clamp(Duration::from_millis(10), Duration::from_secs(3));
            let last = tcp_probe(src, dst, PROBE_PORT, once)?;
            if last == Probe::Answered {
                return Ok(());
            }
            if t0.elapsed() >= timeout {
                if let (Probe::NoSource, Some(s)) = (last, src) {
                    bail!("source address {s} never appeared in {ns_name} within {timeout:?}");
                }
                bail!(
                    "{dst} did not answer a TCP probe (port {PROBE_PORT}) from {ns_name} within {timeout:?}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_counts_as_an_answer() {
        // Find a closed loopback port: bind, read the port, close.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        assert_eq!(
            tcp_probe(None, Ipv4Addr::LOCALHOST, port, Duration::from_secs(1)).unwrap(),
            Probe::Answered
        );
        drop(l);
        assert_eq!(
            tcp_probe(None, Ipv4Addr::LOCALHOST, port, Duration::from_secs(1)).unwrap(),
            Probe::Answered
        );
    }

    #[test]
    fn a_missing_namespace_is_an_error_not_unreachable() {
        let e = wait_reachable(
            "braid-no-such-namespace",
            None,
            Ipv4Addr::LOCALHOST,
            Duration::from_millis(100),
        )
        .unwrap_err();
        assert!(
            format!("{e:#}").contains("braid-no-such-namespace"),
            "{e:#}"
        );
        assert!(!format!("{e:#}").contains("did not answer"), "{e:#}");
    }
}
