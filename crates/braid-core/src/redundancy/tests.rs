use super::*;
use crate::path::{EstimatorConfig, PathId, PathParams, PathState};
use proptest::prelude::*;

fn ipv4(proto: u8, sport: u16, dport: u16, payload: usize) -> Vec<u8> {
    let total = 28 + payload;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[9] = proto;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    p
}

fn on() -> RedundancyConfig {
    RedundancyConfig {
        enabled: true,
        ..RedundancyConfig::default()
    }
}

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

#[test]
fn off_copies_nothing() {
    let mut p = Policy::new(RedundancyConfig::default());
    let dns = ipv4(17, 40000, 53, 40);
    assert_eq!(p.classify(ms(0), &dns, 100), None);
    assert_eq!(p.decide(ms(0), None, true, true, 100), None);
}

#[test]
fn classes() {
    let mut p = Policy::new(RedundancyConfig {
        ports: vec![5060],
        ..on()
    });
    assert_eq!(
        p.classify(ms(0), &ipv4(17, 40000, 53, 40), 100),
        Some(FlowClass::Dns)
    );
    assert_eq!(
        p.classify(ms(0), &ipv4(6, 5060, 41000, 40), 100),
        Some(FlowClass::Port)
    );
    assert_eq!(
        p.classify(ms(0), &ipv4(17, 40001, 4000, 160), 100),
        Some(FlowClass::RealtimeUdp)
    );
    assert_eq!(
        p.classify(ms(0), &ipv4(6, 40002, 22, 60), 100),
        Some(FlowClass::Interactive)
    );
    // ICMP and fragments are no flow.
    let mut icmp = ipv4(1, 0, 0, 40);
    assert_eq!(p.classify(ms(0), &icmp, 100), None);
    icmp[9] = 17;
    icmp[7] = 1;
    assert_eq!(p.classify(ms(0), &icmp, 100), None);
    assert_eq!(p.classify(ms(0), &[0x45, 0, 0], 100), None);
}

#[test]
fn a_bulk_flow_is_copied_only_at_its_start() {
    let mut p = Policy::new(on());
    let mut copied = 0u64;
    // 1400-byte packets every millisecond: 11.2 Mbit/s for 2 s.
    for i in 0..2000u64 {
        let pkt = ipv4(6, 40000, 80, 1372);
        if p.classify(ms(i), &pkt, 1462).is_some() {
            copied += pkt.len() as u64;
        }
    }
    let cfg = on();
    // The interactive bound passes the first ~16 kB, the small-flow bound 16 KiB.
    assert!(
        copied > 0 && copied <= cfg.small_flow_bytes + 1400,
        "{copied}"
    );
}

#[test]
fn an_interactive_flow_stays_copied() {
    let mut p = Policy::new(on());
    // A 100-byte request every 20 ms for 10 s (40 kbit/s).
    for i in 0..500u64 {
        let c = p.classify(ms(20 * i), &ipv4(6, 40000, 7000, 72), 162);
        assert!(c.is_some(), "packet {i}");
    }
}

#[test]
fn spike_copies_are_budgeted() {
    let mut p = Policy::new(on());
    let mut copies = 0.0;
    let mut sent = 0.0;
    // Bulk traffic (no class) on a spiking path for 3 s.
    for i in 0..3000u64 {
        let pkt = ipv4(6, 40000, 80, 1372);
        let c = p.classify(ms(i), &pkt, 1462);
        sent += 1462.0;
        if c.is_none() && p.decide(ms(i), c, false, true, 1462).is_some() {
            copies += 1462.0;
        }
    }
    let share = copies / sent;
    assert!(share > 0.15 && share < 0.27, "{share}");
}

fn path(rtts_ms: &[u64]) -> PathState {
    let mut p = PathState::new(
        PathId(0),
        PathParams::default(),
        &EstimatorConfig::default(),
    );
    for &r in rtts_ms {
        p.rtt.update(Duration::from_millis(r));
    }
    p
}

#[test]
fn spikes() {
    let cfg = on();
    let calm = path(&[20, 21, 20, 22]);
    assert!(!path_spiking(&cfg, &calm, Some(ms(1000)), ms(1050)));
    // Oldest packet overdue by more than spike_delay beyond srtt: cut.
    assert!(path_spiking(&cfg, &calm, Some(ms(1000)), ms(1130)));
    // Delay spike.
    assert!(path_spiking(&cfg, &path(&[20, 20, 200]), None, ms(0)));
    // Loss spike.
    let mut lossy = path(&[20]);
    for _ in 0..20 {
        lossy.loss.on_lost(1);
        lossy.loss.on_delivered(1);
    }
    assert!(path_spiking(&cfg, &lossy, None, ms(0)));
    // No samples yet: no verdict.
    assert!(!path_spiking(&cfg, &path(&[]), Some(ms(0)), ms(5000)));
}

proptest! {
    /// Whatever bytes come in, classification neither panics nor copies
    /// a flow that is no TCP or UDP packet.
    #[test]
    fn arbitrary_packets(bytes in proptest::collection::vec(any::<u8>(), 0..80), t in 0u64..10_000) {
        let mut p = Policy::new(on());
        let c = p.classify(ms(t), &bytes, bytes.len() + 62);
        if flows::flow_id(&bytes).is_none() {
            prop_assert_eq!(c, None);
        }
    }

    /// The budget holds at every moment for any mix of traffic and
    /// spike copies: the recent copied bytes stay within
    /// `max_spike_share` of the recent sent bytes plus the slack.
    #[test]
    fn budget_bound(lens in proptest::collection::vec(60usize..1500, 1..400), step in 0u64..50) {
        let mut p = Policy::new(on());
        for (i, &l) in lens.iter().enumerate() {
            let now = ms(i as u64 * step);
            p.classify(now, &ipv4(6, 1, 2, 1), l);
            p.within_budget(now, l);
            let bound = 0.25 * p.sent.value(now) + BUDGET_SLACK_BYTES;
            prop_assert!(p.budgeted.value(now) <= bound + 1e-6);
        }
    }
}
