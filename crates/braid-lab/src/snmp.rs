//! The kernel's protocol counters of one network namespace
//! (`/proc/net/snmp`, which is per namespace): what the tests read to tell
//! a loss on an emulated path from a loss at a socket of the host, for
//! example datagrams a receiver's full buffer dropped (`Udp:
//! RcvbufErrors`) or the inner TCP's retransmissions (`Tcp: RetransSegs`).

use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::cmd::ns_command;

/// Every counter of protocol `proto` ("Udp", "Tcp", "Ip", ...) in
/// namespace `ns`, by name, in the kernel's order: one reading of a
/// [`Watch`].
pub fn counters(ns: &str, proto: &str) -> anyhow::Result<Vec<(String, u64)>> {
    Watch::new(ns)?.counters(proto)
}

/// One counter, e.g. `counter(ns, "Udp", "RcvbufErrors")`.
pub fn counter(ns: &str, proto: &str, name: &str) -> anyhow::Result<u64> {
    Watch::new(ns)?.counter(proto, name)
}

/// Reads one namespace's counters many times without starting a program
/// for each reading: a `sleep` parked in the namespace lends its
/// `/proc/PID/net/snmp`. A reading then takes microseconds, so two of them
/// a few seconds apart time a rate as exactly as the emulator's own
/// snapshots do.
pub struct Watch {
    child: Child,
    snmp: PathBuf,
}

impl Watch {
    pub fn new(ns: &str) -> anyhow::Result<Watch> {
        let mut child = ns_command(ns, &["sleep", "infinity"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("parking a process in namespace {ns}"))?;
        let pid = child.id();
        let comm = PathBuf::from(format!("/proc/{pid}/comm"));
        // `ip netns exec` enters the namespace, then becomes `sleep`.
        let t0 = Instant::now();
        while std::fs::read_to_string(&comm).map_or(true, |c| c.trim() != "sleep") {
            if t0.elapsed() > Duration::from_secs(5) || child.try_wait()?.is_some() {
                let _ = child.kill();
                let _ = child.wait();
                bail!("`ip netns exec {ns} sleep` did not start (is there a namespace {ns}?)");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(Watch {
            child,
            snmp: PathBuf::from(format!("/proc/{pid}/net/snmp")),
        })
    }

    /// Every counter of protocol `proto` now.
    pub fn counters(&self, proto: &str) -> anyhow::Result<Vec<(String, u64)>> {
        let text = std::fs::read_to_string(&self.snmp)
            .with_context(|| format!("reading {}", self.snmp.display()))?;
        parse(&text, proto)
    }

    /// The counters `names` of protocol `proto`, from one reading, so that
    /// they are of one moment.
    pub fn read(&self, proto: &str, names: &[&str]) -> anyhow::Result<Vec<u64>> {
        let all = self.counters(proto)?;
        names
            .iter()
            .map(|name| {
                all.iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| *v)
                    .with_context(|| {
                        format!("no counter {proto}: {name} in {}", self.snmp.display())
                    })
            })
            .collect()
    }

    /// One counter now.
    pub fn counter(&self, proto: &str, name: &str) -> anyhow::Result<u64> {
        Ok(self.read(proto, &[name])?[0])
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `/proc/net/snmp` holds each protocol as two lines, "Proto: names..."
/// then "Proto: values...".
fn parse(text: &str, proto: &str) -> anyhow::Result<Vec<(String, u64)>> {
    let tag = format!("{proto}:");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(&tag)).collect();
    let [names, values] = lines[..] else {
        bail!(
            "/proc/net/snmp has {} lines for {proto}, not 2",
            lines.len()
        );
    };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .skip(1)
        .map(|(k, v)| {
            // Some counters (Tcp: MaxConn) are signed.
            let n: i64 = v
                .parse()
                .with_context(|| format!("{proto}: {k} is {v:?}, not a number"))?;
            Ok((k.to_string(), n.max(0) as u64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SNMP: &str = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
        Tcp: RtoAlgorithm MaxConn RetransSegs\nTcp: 1 -1 17\n\
        Udp: InDatagrams RcvbufErrors\nUdp: 900 42\n";

    #[test]
    fn reads_the_named_protocol_only() {
        assert_eq!(
            parse(SNMP, "Udp").unwrap(),
            vec![("InDatagrams".into(), 900), ("RcvbufErrors".into(), 42)]
        );
        let tcp = parse(SNMP, "Tcp").unwrap();
        assert_eq!(tcp[1], ("MaxConn".into(), 0));
        assert_eq!(tcp[2], ("RetransSegs".into(), 17));
    }

    #[test]
    fn a_missing_protocol_is_an_error() {
        let e = parse(SNMP, "Sctp").unwrap_err().to_string();
        assert!(e.contains("0 lines for Sctp"), "{e}");
    }
}
