//! `scheduler`, `[tuning]` and `[redundancy]` checked into the core's
//! configuration: every value range-checked, with the fix in the error.

use anyhow::{anyhow, bail, Result};
use braid_core::conn::ConnConfig;
use braid_core::path::MAX_PATHS;
use braid_core::reorder::ReorderConfig;
use braid_core::sched::SchedulerKind;
use braid_core::time::Duration;

use super::{RedundancyFile, ReorderSetting, TuningFile};

/// The protocol settings from `scheduler`, `[tuning]` and `tun.mtu`.
pub(super) fn conn_config(scheduler: &str, t: &TuningFile, mtu: Option<u16>) -> Result<ConnConfig> {
    let kind = SchedulerKind::parse(scheduler).ok_or_else(|| {
        let names: Vec<&str> = SchedulerKind::ALL.iter().map(|k| k.as_str()).collect();
        anyhow!(
            "`scheduler`: unknown scheduler `{scheduler}`; use one of {}",
            names.join(", ")
        )
    })?;
    let mut c = ConnConfig {
        scheduler: kind,
        ..ConnConfig::default()
    };
    if let Some(m) = mtu {
        if !(576..=65_000).contains(&m) {
            bail!(
                "`tun.mtu`: {m} is out of range; use 576..65000 (1438 fills a 1500-byte path MTU)"
            );
        }
        c.inner_mtu = m;
    }
    let ms = |key: &str, v: Option<u64>, min: u64, max: u64| -> Result<Option<Duration>> {
        match v {
            None => Ok(None),
            Some(x) if (min..=max).contains(&x) => Ok(Some(Duration::from_millis(x))),
            Some(x) => bail!("`tuning.{key}`: {x} is out of range; use {min}..{max}"),
        }
    };
    if let Some(d) = ms("keepalive_ms", t.keepalive_ms, 10, 60_000)? {
        c.keepalive_interval = d;
    }
    if let Some(d) = ms("path_timeout_ms", t.path_timeout_ms, 50, 600_000)? {
        c.path_timeout = d;
    }
    if c.path_timeout <= c.keepalive_interval {
        bail!(
            "`tuning.path_timeout_ms` ({} ms) must exceed `tuning.keepalive_ms` ({} ms), \
             ideally 3x, or idle paths flap",
            c.path_timeout.as_millis(),
            c.keepalive_interval.as_millis()
        );
    }
    if let Some(d) = ms("handshake_timeout_ms", t.handshake_timeout_ms, 100, 600_000)? {
        c.handshake_timeout = d;
    }
    if let Some(n) = t.feedback_max_entries {
        if !(1..=braid_core::wire::MAX_FEEDBACK_ENTRIES).contains(&n) {
            bail!(
                "`tuning.feedback_max_entries`: {n} is out of range; use 1..{}",
                braid_core::wire::MAX_FEEDBACK_ENTRIES
            );
        }
        c.receiver.feedback_max_entries = n;
    }
    if let Some(us) = t.feedback_max_delay_us {
        if us > 100_000 {
            bail!("`tuning.feedback_max_delay_us`: {us} is out of range; use 0..100000");
        }
        c.receiver.feedback_max_delay = Duration::from_micros(us);
    }
    if let Some(us) = t.feedback_max_delay_small_us {
        if us > 200_000 {
            bail!("`tuning.feedback_max_delay_small_us`: {us} is out of range; use 0..200000");
        }
        c.receiver.feedback_max_delay_small = Duration::from_micros(us);
    }
    let mut reorder = ReorderConfig::default();
    match &t.reorder {
        None | Some(ReorderSetting::Flag(true)) => {}
        Some(ReorderSetting::Flag(false)) => reorder.mode = braid_core::reorder::ReorderMode::Off,
        Some(ReorderSetting::Mode(m)) => match m.as_str() {
            "bmp" => {}
            "off" => reorder.mode = braid_core::reorder::ReorderMode::Off,
            "prism-rpc" => {
                // The data goes up as it comes; the ACKs it causes are
                // controlled where they come back (braid_core::rpc::tcp).
                reorder.mode = braid_core::reorder::ReorderMode::Off;
                c.rpc = Some(braid_core::rpc::RpcConfig {
                    capacity: 8192,
                    ..Default::default()
                });
            }
            other => bail!(
                "`tuning.reorder`: unknown mode `{other}`; use \"bmp\" (resequence the data, the default), \"prism-rpc\" (PRISM's reverse-path ACK control; set it on both ends) or \"off\""
            ),
        },
    }
    if let Some(d) = ms(
        "reorder_loss_timeout_ms",
        t.reorder_loss_timeout_ms,
        1,
        60_000,
    )? {
        reorder.loss_timeout = d;
        // A timer the user chose is kept fixed.
        c.reorder_adaptive_hold = false;
    }
    if let Some(wait) = t.near_paths_wait {
        c.pet.near_floor = wait;
    }
    if let Some(on) = t.compress_headers {
        c.compress_headers = on;
    }
    if let Some(d) = ms("startup_hold_ms", t.startup_hold_ms, 0, 10_000)? {
        c.startup_hold = d;
    }
    if let Some(d) = ms("reorder_max_hold_ms", t.reorder_max_hold_ms, 10, 60_000)? {
        reorder.max_hold = d;
        reorder.min_hold = reorder.min_hold.min(d);
    }
    if let Some(r) = &t.repair {
        c.repair = braid_core::repair::RepairMode::parse(r).ok_or_else(|| {
            anyhow!("`tuning.repair`: unknown mode `{r}`; use \"auto\" (ARQ on near paths, FEC on far or very lossy ones), \"arq\" (resend path losses inside the tunnel), \"fec\" (Reed-Solomon parity, no resends) or \"off\"")
        })?;
    }
    if let Some(b) = t.reorder_max_buffer_bytes {
        if !(65_536..=(1 << 30)).contains(&b) {
            bail!("`tuning.reorder_max_buffer_bytes`: {b} is out of range; use 65536..1073741824");
        }
        reorder.max_buffer_bytes = b;
    }
    c.receiver.reorder = reorder;
    Ok(c)
}

/// The redundant mode's settings from `[redundancy]`.
pub(super) fn redundancy_config(
    f: &RedundancyFile,
) -> Result<braid_core::redundancy::RedundancyConfig> {
    let mut r = braid_core::redundancy::RedundancyConfig::default();
    if let Some(e) = f.enabled {
        r.enabled = e;
    }
    if let Some(c) = f.copies {
        if !(2..=MAX_PATHS as u8).contains(&c) {
            bail!("`redundancy.copies`: {c} is out of range; use 2..{MAX_PATHS} (2 = the packet and one copy)");
        }
        r.copies = c;
    }
    if let Some(d) = f.dns {
        r.dns = d;
    }
    if let Some(p) = &f.ports {
        if let Some(i) = p.iter().position(|&x| x == 0) {
            bail!("`redundancy.ports[{i}]`: port 0 matches nothing; list ports 1..65535, e.g. ports = [22, 5060]");
        }
        r.ports = p.clone();
    }
    if let Some(b) = f.small_flow_bytes {
        r.small_flow_bytes = b;
    }
    if let Some(k) = f.interactive_max_kbps {
        r.interactive_max_bps = k.saturating_mul(1000);
    }
    if let Some(k) = f.realtime_udp_max_kbps {
        r.realtime_udp_max_bps = k.saturating_mul(1000);
    }
    if let Some(b) = f.retransmissions {
        r.retransmissions = b;
    }
    if let Some(b) = f.on_spike {
        r.on_spike = b;
    }
    if let Some(l) = f.spike_loss {
        if !(l > 0.0 && l <= 1.0) {
            bail!("`redundancy.spike_loss`: {l} is out of range; use a loss rate in (0, 1], e.g. 0.05");
        }
        r.spike_loss = l;
    }
    if let Some(ms) = f.spike_delay_ms {
        if !(1..=60_000).contains(&ms) {
            bail!("`redundancy.spike_delay_ms`: {ms} is out of range; use 1..60000");
        }
        r.spike_delay = Duration::from_millis(ms);
    }
    if let Some(s) = f.max_spike_share {
        if !(0.0..=4.0).contains(&s) {
            bail!("`redundancy.max_spike_share`: {s} is out of range; use 0..4 (0.25 = spike copies may add a quarter to the data sent)");
        }
        r.max_spike_share = s;
    }
    Ok(r)
}
