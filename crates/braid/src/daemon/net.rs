//! Sockets and host configuration: one UDP socket per client path (bound
//! to the path's interface and/or source address), the server's socket,
//! routes into the client's TUN device, and the server's NAT rule.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::Command;

use anyhow::{bail, Context, Result};
use braid_core::conn::Ipv4Net;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

use crate::config::PathSettings;

/// Socket buffers: several paths' worth of bursts.
const SOCKET_BUFFER_BYTES: usize = 4 << 20;

fn udp_socket(domain: Domain) -> io::Result<Socket> {
    let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: the kernel caps these at net.core.*mem_max.
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER_BYTES);
    Ok(s)
}

/// The socket of one client path: bound to `device` (SO_BINDTODEVICE) so
/// its packets leave through that interface whatever the routing table
/// says (the tunnel may hold the default route), and to `bind` as source
/// address. Not connected: an interface that is down at start must not
/// stop the daemon; datagrams from anyone but the server are ignored.
pub fn path_socket(p: &PathSettings) -> Result<UdpSocket> {
    let domain = Domain::for_address(p.server);
    let s = udp_socket(domain)
        .with_context(|| format!("path `{}`: cannot create a UDP socket", p.name))?;
    if let Some(dev) = &p.device {
        s.bind_device(Some(dev.as_bytes())).with_context(|| {
            format!(
                "path `{}`: cannot bind to device `{dev}` (`device`): does it exist? SO_BINDTODEVICE needs root or CAP_NET_RAW",
                p.name
            )
        })?;
    }
    let local = match (p.bind, p.server) {
        (Some(ip), _) => SocketAddr::new(ip, 0),
        (None, SocketAddr::V4(_)) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        (None, SocketAddr::V6(_)) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
    };
    if local.is_ipv4() != p.server.is_ipv4() {
        bail!(
            "path `{}`: `bind` {} and the server {} are of different IP versions",
            p.name,
            local.ip(),
            p.server
        );
    }
    s.bind(&local.into()).with_context(|| {
        format!(
            "path `{}`: cannot bind to {} (`bind`): is that address configured on this host?",
            p.name,
            local.ip()
        )
    })?;
    s.set_nonblocking(true)?;
    Ok(UdpSocket::from_std(s.into())?)
}

/// The server's socket on `listen`.
pub fn server_socket(listen: SocketAddr) -> Result<UdpSocket> {
    let s = udp_socket(Domain::for_address(listen))?;
    s.bind(&listen.into()).with_context(|| {
        format!("`listen`: cannot bind UDP {listen} (in use, or not an address of this host?)")
    })?;
    s.set_nonblocking(true)?;
    Ok(UdpSocket::from_std(s.into())?)
}

fn run(cmd: &mut Command) -> io::Result<()> {
    let out = cmd.output().map_err(|e| {
        io::Error::new(e.kind(), format!("cannot run {:?}: {e}", cmd.get_program()))
    })?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "{:?} {:?} failed: {}",
            cmd.get_program(),
            cmd.get_args().collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Routes `net` into device `dev` (`ip route replace NET dev DEV`).
pub fn add_route(net: &Ipv4Net, dev: &str) -> io::Result<()> {
    run(Command::new("ip").args(["route", "replace", &net.to_string(), "dev", dev]))
}

/// The nftables ruleset `[nat]` applies: masquerade the tunnel network
/// out of `out_interface` (also in docs/DEPLOY.md).
pub fn nat_ruleset(network: &Ipv4Net, out_interface: &str) -> String {
    format!(
        "table ip braid {{\n  chain postrouting {{\n    type nat hook postrouting priority srcnat; policy accept;\n    ip saddr {network} oifname \"{out_interface}\" masquerade\n  }}\n}}\n"
    )
}

/// Enables IPv4 forwarding and installs the masquerade table `ip braid`
/// (replacing an older one).
pub fn apply_nat(network: &Ipv4Net, out_interface: &str) -> Result<()> {
    std::fs::write("/proc/sys/net/ipv4/ip_forward", "1\n")
        .context("`nat.enabled`: cannot enable IPv4 forwarding (needs root)")?;
    // Ignore the error: the table may not exist yet.
    let _ = run(Command::new("nft").args(["delete", "table", "ip", "braid"]));
    let script = nat_ruleset(network, out_interface);
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("`nat.enabled`: cannot run nft (install nftables)")?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("piped");
        stdin.write_all(script.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "`nat.enabled`: nft refused the masquerade rule: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Removes the table [`apply_nat`] installed.
pub fn remove_nat() {
    let _ = run(Command::new("nft").args(["delete", "table", "ip", "braid"]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruleset_text() {
        let n = Ipv4Net::parse("10.77.0.0/24").unwrap();
        let r = nat_ruleset(&n, "eth0");
        assert!(r.contains("ip saddr 10.77.0.0/24 oifname \"eth0\" masquerade"));
        assert!(r.contains("type nat hook postrouting priority srcnat"));
    }
}
