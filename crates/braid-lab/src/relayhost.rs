//! A community relay's host in the lab (PRISM Sections 2-3): a namespace,
//! `braid-rly`, whose uplink is one of the lab's emulated paths.
//!
//! ```text
//!  braid-cli              braid-rly                     braid-emu              braid-prx
//!  rly0 10.79.0.1  ==  lan0 10.79.0.2
//!                      eth<i> 10.77.i.1  ==  c<i> ~emulator~ p<i>  ==  eth<i> 10.77.i.2
//! ```
//!
//! In PRISM a community member forwards its neighbours' traffic over its
//! own WWAN link, and the neighbours reach it over a local network much
//! faster than that link. So [`add`] hands path `i`'s client end (the
//! client's `eth<i>`, with its address `10.77.i.1`) to the relay's host,
//! where it becomes the relay's uplink, and joins the client to the relay
//! host by a veth that nothing emulates (the local network). The lab
//! file's rate, delay and loss for path `i` are then the relay's uplink's,
//! and what the client sends on that path crosses the local link, the
//! relay and the relay's uplink in turn. A veth keeps its MAC address and
//! its peer when it changes namespace, so the emulator and the proxy see
//! the same link as before.
//!
//! [`remove`] gives the interface back to the client with its address and
//! routing table, so one lab serves direct runs after a relayed one;
//! [`crate::topo::down`] removes the relay host with the rest of the lab.

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::cmd;
use crate::topo::{
    self, add_namespace, cli_addr, disable_offloads, ip, path_if, path_table, prx_addr, sysctl,
    NS_CLI, NS_RLY,
};

/// The client's end of its local link to the relay host (in `braid-cli`).
pub const CLI_LAN_IF: &str = "rly0";
/// The relay host's end of that link (in `braid-rly`).
pub const RLY_LAN_IF: &str = "lan0";
/// The client's address on the local link: its relayed path binds here.
pub const CLI_LAN_ADDR: Ipv4Addr = Ipv4Addr::new(10, 79, 0, 1);
/// The relay host's address on the local link: the relay listens here.
pub const RLY_LAN_ADDR: Ipv4Addr = Ipv4Addr::new(10, 79, 0, 2);

fn exists() -> bool {
    topo::list_namespaces().iter().any(|n| n == NS_RLY)
}

/// Makes path `i`'s emulated link the uplink of a new relay host. The lab
/// must be up and have a path `i`; only one relay host exists at a time.
/// On failure what was changed is undone ([`remove`]).
pub fn add(i: usize) -> anyhow::Result<()> {
    if !topo::is_up() {
        bail!("the lab is not up: bring it up (`braid lab up FILE`) before adding a relay host");
    }
    if exists() {
        bail!("a relay host ({NS_RLY}) already exists; remove it first");
    }
    let pif = path_if(i);
    if !cmd::run_quiet(&["ip", "-n", NS_CLI, "link", "show", &pif]) {
        bail!("the lab has no path {i} ({pif} is not in {NS_CLI}) to give a relay host");
    }
    build(i).or_else(|e| {
        let _ = remove(i);
        Err(e).with_context(|| format!("making path {i} a relay host's uplink"))
    })
}

fn build(i: usize) -> anyhow::Result<()> {
    let pif = path_if(i);
    add_namespace(NS_RLY)?;
    // The client's routing for path `i` leaves with its interface; its
    // source rule would point at a table without routes.
    let (src, table) = (cli_addr(i).to_string(), path_table(i).to_string());
    ip(NS_CLI, &["rule", "del", "from", &src, "table", &table])?;
    ip(NS_CLI, &["link", "set", &pif, "netns", NS_RLY])?;
    disable_offloads(NS_RLY, &pif)?;
    sysctl(NS_RLY, &format!("net.ipv4.conf.{pif}.rp_filter=0"))?;
    ip(NS_RLY, &["addr", "add", &format!("{src}/24"), "dev", &pif])?;
    ip(NS_RLY, &["link", "set", &pif, "up"])?;
    crate::topo::pin_neighbour(NS_RLY, i, true)?;

    ip(
        NS_CLI,
        &[
            "link", "add", CLI_LAN_IF, "type", "veth", "peer", "name", RLY_LAN_IF, "netns", NS_RLY,
        ],
    )?;
    for (ns, dev, addr) in [
        (NS_CLI, CLI_LAN_IF, CLI_LAN_ADDR),
        (NS_RLY, RLY_LAN_IF, RLY_LAN_ADDR),
    ] {
        disable_offloads(ns, dev)?;
        sysctl(ns, &format!("net.ipv4.conf.{dev}.rp_filter=0"))?;
        ip(ns, &["addr", "add", &format!("{addr}/24"), "dev", dev])?;
        ip(ns, &["link", "set", dev, "up"])?;
    }
    Ok(())
}

/// Stops what runs in the relay host, gives path `i`'s interface back to
/// the client with its address, routing table and source rule, and
/// deletes the relay host. Safe to call when there is none, or after a
/// partial [`add`].
pub fn remove(i: usize) -> anyhow::Result<()> {
    let pif = path_if(i);
    if exists() {
        for pid in topo::ns_pids(NS_RLY) {
            cmd::stop_pid(pid, Duration::from_millis(500));
        }
        if cmd::run_quiet(&["ip", "-n", NS_RLY, "link", "show", &pif]) {
            ip(NS_RLY, &["link", "set", &pif, "netns", NS_CLI])?;
        }
        // Deleting the namespace deletes the local link's veth pair.
        cmd::run(&["ip", "netns", "del", NS_RLY]).context("deleting the relay host")?;
    }
    // Idempotent: clear whatever the client's end still has, then give it
    // what `topo::up` gave it.
    let (src, table) = (cli_addr(i).to_string(), path_table(i).to_string());
    cmd::run_quiet(&["ip", "-n", NS_CLI, "addr", "flush", "dev", &pif]);
    cmd::run_quiet(&["ip", "-n", NS_CLI, "route", "flush", "table", &table]);
    while cmd::run_quiet(&[
        "ip", "-n", NS_CLI, "rule", "del", "from", &src, "table", &table,
    ]) {}
    disable_offloads(NS_CLI, &pif)?;
    topo::address_client_path(i)?;
    if i == 0 {
        // The main table's default route went with path 0's interface.
        let gw = prx_addr(0).to_string();
        ip(
            NS_CLI,
            &["route", "replace", "default", "via", &gw, "dev", &pif],
        )?;
    }
    Ok(())
}
