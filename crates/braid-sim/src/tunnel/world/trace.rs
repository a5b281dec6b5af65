use super::*;

/// A start-up trace of a lab file (diagnosis only):
/// `BRAID_TRACE=three-paths cargo test -p braid-sim --lib trace -- --ignored --nocapture`.
/// `BRAID_TRACE` may also be a path to a lab file; `BRAID_TRACE_SEED`
/// replaces the file's seed (the links' loss draws); `BRAID_TRACE_WAIT=3`
/// starts the transfer once every path is up (`--wait-paths 3`).
#[test]
#[ignore]
fn trace_lab_start() {
    let name = std::env::var("BRAID_TRACE").unwrap_or_else(|_| "three-paths".into());
    let mut cfg = if name.ends_with(".toml") {
        braid_lab::load_config(&name)
    } else {
        braid_lab::shipped(&name)
    }
    .unwrap();
    if let Some(seed) = std::env::var("BRAID_TRACE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        cfg.seed = Some(seed);
    }
    // BRAID_TRACE_LOSS=1:0.3 sets path 1's loss to 30 % each way.
    if let Some((i, l)) = std::env::var("BRAID_TRACE_LOSS")
        .ok()
        .and_then(|v| v.split_once(':').map(|(a, b)| (a.to_owned(), b.to_owned())))
        .and_then(|(a, b)| Some((a.parse::<usize>().ok()?, b.parse::<f64>().ok()?)))
    {
        cfg.paths[i].loss = Some(l);
    }
    // BRAID_TRACE_CROSS=1:8: a competing TCP flow on path 1, started
    // 8 s before the transfer.
    let cross = std::env::var("BRAID_TRACE_CROSS").ok().and_then(|v| {
        let (a, b) = v.split_once(':')?;
        Some((a.parse::<usize>().ok()?, b.parse::<f64>().ok()?))
    });
    let opts = LabRunOptions {
        cross_tcp: cross.map(|c| c.0),
        cross_lead_s: cross.map_or(0.0, |c| c.1),
        wait_paths_s: std::env::var("BRAID_TRACE_WAIT")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0),
        // BRAID_TRACE_IDLE=3: the tunnel idles 3 s before the transfer.
        idle_s: std::env::var("BRAID_TRACE_IDLE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0),
        // BRAID_TRACE_HANDSHAKE=1: the transfer opens with a SYN.
        handshake: std::env::var_os("BRAID_TRACE_HANDSHAKE").is_some(),
        ..LabRunOptions::default()
    };
    let mut w = TunnelWorld::new(&cfg, SchedulerKind::Pet, &opts);
    let mut t = Instant::ZERO;
    while w.started.is_none() {
        t += Duration::from_millis(10);
        w.run_until(t);
    }
    let start = w.started.unwrap();
    let step_ms: u64 = std::env::var("BRAID_TRACE_STEP_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(250);
    let step = Duration::from_millis(step_ms);
    let step_s = step_ms as f64 / 1000.0;
    let mut last_d = 0;
    let mut last_p: Vec<u64> = w.up.iter().map(|l| l.stats.delivered_bytes).collect();
    let secs: u32 = std::env::var("BRAID_TRACE_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    for k in 1..=(secs * 1000 / step_ms as u32) {
        w.run_until(start + step * k);
        let d = w.rx.delivered_bytes();
        let st = w.client.status(w.now);
        let rs = w.server.status(w.now);
        let ps: Vec<u64> = w.up.iter().map(|l| l.stats.delivered_bytes).collect();
        let rates: Vec<String> = ps
            .iter()
            .zip(&last_p)
            .map(|(a, b)| format!("{:.2}", (a - b) as f64 * 8.0 / step_s / 1e6))
            .collect();
        let s = w.tx.stats();
        let peer = &rs.peers[0].tunnel.reorder;
        let ss = &rs.peers[0].tunnel.sender;
        let cr = &st.tunnel.reorder;
        println!(
            "t={:5.2} | up: nack={} rep={} ab={} hold={}ms late={} | down: lost_to={} nack={} rep={} crs_timer={} chold={}ms | good={:6.2} cwnd={:6.1} ssth={:5} flight={:4} rtx={} to={} paths=[{}] inflight={:?} pdrops={} lost_to={} lost_fifo={} rs_lost_timer={} rs_buf={} srtt={:?} bw={:?} up={:?} tcp_min_rtt={:?} pace={:?} qdrops={:?} rep/paced/copies/red={:?} stranded={}/{} quiet={}/{} ab={} loss%={:?}",
            step_s * k as f64,
            st.tunnel.sender.lost_nack,
            st.tunnel.sender.repairs_sent,
            st.tunnel.sender.repairs_abandoned,
            peer.hold_ns / 1_000_000,
            peer.late,
            ss.lost_timeout,
            ss.lost_nack,
            ss.repairs_sent,
            cr.lost_timer,
            cr.hold_ns / 1_000_000,
            (d - last_d) as f64 * 8.0 / step_s / 1e6,
            w.tx.cwnd(),
            w.tx.ssthresh(),
            w.tx.snd_max() - w.tx.snd_una(),
            s.retransmits,
            s.timeouts,
            rates.join(" "),
            st.tunnel.paths.iter().map(|p| p.in_flight_packets).collect::<Vec<_>>(),
            st.tunnel.sender.pacing_drops,
            st.tunnel.sender.lost_timeout,
            st.tunnel.sender.lost_fifo,
            peer.lost_timer,
            peer.buffered_packets,
            st.tunnel.paths.iter().map(|p| p.srtt.map(|d| d.as_millis())).collect::<Vec<_>>(),
            st.tunnel.paths.iter().map(|p| p.bandwidth_bps.map(|b| (b / 1e5).round() / 10.0)).collect::<Vec<_>>(),
            st.tunnel.paths.iter().map(|p| p.up).collect::<Vec<_>>(),
            w.tx.cubic().and_then(|c| c.min_rtt()).map(|d| d.as_millis()),
            st.tunnel.paths.iter().map(|p| p.pacing_rate_bps.map(|b| (b / 1e5).round() / 10.0)).collect::<Vec<_>>(),
            w.up.iter().map(|l| l.stats.drops_queue).collect::<Vec<_>>(),
            (st.tunnel.sender.repairs_sent, st.tunnel.sender.repairs_paced, st.tunnel.sender.repair_copies, st.tunnel.sender.redundant_copies),
            st.tunnel.sender.stranded,
            ss.stranded,
            st.tunnel.sender.quiet_paths,
            ss.quiet_paths,
            st.tunnel.sender.repairs_abandoned,
            st.tunnel.paths.iter().map(|p| (p.loss_rate * 1e4).round() / 100.0).collect::<Vec<_>>(),
        );
        // BRAID_TRACE_SEQ=1: the inner TCP's sequence numbers (a stall
        // shows as snd_una and rcv_nxt standing still below snd_max).
        if std::env::var_os("BRAID_TRACE_SEQ").is_some() {
            println!(
                "   seq: una={} max={} rcv_nxt={} requeued={} repairs_carried={:?}",
                w.tx.snd_una(),
                w.tx.snd_max(),
                w.rx.rcv_nxt(),
                st.tunnel.sender.requeued,
                st.tunnel
                    .paths
                    .iter()
                    .map(|p| p.repairs_carried)
                    .collect::<Vec<_>>(),
            );
        }
        // BRAID_TRACE_SERVER=1: the server's side of each path too (the
        // downlink, which carries the inner TCP's ACKs of an upload).
        if std::env::var_os("BRAID_TRACE_SERVER").is_some() {
            let sp = &rs.peers[0].tunnel.paths;
            println!(
                "   server: srtt={:?} inflight={:?} bw={:?} downlink_bytes={:?}",
                sp.iter()
                    .map(|p| p.srtt.map(|d| d.as_millis()))
                    .collect::<Vec<_>>(),
                sp.iter().map(|p| p.in_flight_packets).collect::<Vec<_>>(),
                sp.iter()
                    .map(|p| p.bandwidth_bps.map(|b| (b / 1e5).round() / 10.0))
                    .collect::<Vec<_>>(),
                w.down
                    .iter()
                    .map(|l| l.stats.delivered_bytes)
                    .collect::<Vec<_>>(),
            );
        }
        last_d = d;
        last_p = ps;
    }
}
