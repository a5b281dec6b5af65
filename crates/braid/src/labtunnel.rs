//! braid modes of `braid lab bench`: start `braid server` in the proxy
//! namespace and `braid client` in the client namespace with the chosen
//! scheduler, then let iperf3 run through the tunnel.

use braid_core::sched::SchedulerKind;
use braid_lab::Mode;

pub fn mode(name: &str, kind: SchedulerKind) -> anyhow::Result<Mode> {
    let _ = kind;
    anyhow::bail!("mode `{name}`: the tunnel daemon is not wired into the lab yet")
}
