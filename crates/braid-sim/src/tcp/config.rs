//! TCP model parameters, defaulting to the ns-2 agent of the PET/BMP paper.

use braid_core::time::Duration;
use serde::{Deserialize, Serialize};

/// Parameters shared by [`super::TcpSender`] and [`super::TcpReceiver`].
///
/// [`Default`] reproduces the setup of the PET/BMP paper, Section III-A:
/// ns-2 `Agent/TCP/Newreno` with `packetSize_` 1500 bytes on the wire,
/// `window_` 50, `maxburst_` 4, and a `TCPSink` without delayed ACKs. The
/// timer values are the ns-2 defaults (`rtxcur_init_` 3 s, `minrto_`
/// 200 ms, `tcpTick_` 10 ms) with a 64 s ceiling (`maxrto_`).
///
/// Deserialization fills missing fields from [`Default`]; durations are
/// written as seconds (`min_rto = 0.2`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpConfig {
    /// Payload bytes per packet (SMSS). Windows count packets, so this only
    /// matters for byte counters and wire sizes.
    pub mss_bytes: u32,
    /// TCP/IP header bytes added to every data packet and carried alone by
    /// every ACK (ns-2 `tcpip_base_hdr_size_` = 40).
    pub header_bytes: u32,
    /// Ceiling on the window in packets. It acts like ns-2 `window_` (the
    /// receiver's advertised window): the usable window is
    /// `min(cwnd + dupwnd, max_cwnd_pkts)`, and `cwnd` itself is clamped to
    /// it (ns-2 `maxcwnd_`), so a long loss-free period does not leave a
    /// huge `cwnd` behind.
    pub max_cwnd_pkts: u32,
    /// Initial congestion window (ns-2 `windowInit_` = 1).
    pub init_cwnd_pkts: u32,
    /// Initial slow-start threshold; it is clamped to `max_cwnd_pkts`
    /// (ns-2 sets `ssthresh_ = window_` on reset), so "large" means
    /// "slow start until the window ceiling".
    pub init_ssthresh_pkts: u32,
    /// At most this many packets leave in response to one ACK or timer
    /// event (ns-2 `maxburst_`, Fall and Floyd's max-burst), 0 = no limit.
    /// The paper sets 4 to avoid the burst on leaving fast recovery.
    pub max_burst: u32,
    /// Duplicate ACKs that trigger fast retransmit (ns-2 `numdupacks_`,
    /// RFC 5681 Section 3.2).
    pub dupack_threshold: u32,
    /// Receiver ACKs every second in-order segment or after
    /// `delack_timeout` (ns-2 `Agent/TCPSink/DelAck`, RFC 5681 Section
    /// 4.2). Off in the paper.
    pub delayed_ack: bool,
    /// Delayed-ACK timer (ns-2 `DelAck interval_` = 100 ms).
    #[serde(with = "secs_f64")]
    pub delack_timeout: Duration,
    /// Selective acknowledgments: the receiver sends up to three RFC 2018
    /// blocks and the sender recovers with the RFC 6675 pipe algorithm.
    pub sack: bool,
    /// RTO before the first RTT sample (ns-2 `rtxcur_init_`, RFC 6298
    /// Section 2.1 uses 1 s; ns-2 and RFC 2988 used 3 s).
    #[serde(with = "secs_f64")]
    pub initial_rto: Duration,
    /// Floor on the RTO before backoff (ns-2 `minrto_`).
    #[serde(with = "secs_f64")]
    pub min_rto: Duration,
    /// Where `min_rto` applies: `false` (ns-2, RFC 6298 (2.4)) floors the
    /// whole timeout, `max(SRTT + 4 RTTVAR, min_rto)`; `true` floors the
    /// variation term alone, `SRTT + max(4 RTTVAR, min_rto)`, as Linux
    /// does (`tcp_rtt_estimator` keeps `rttvar_us` at least
    /// `tcp_rto_min_us`, and `__tcp_set_rto` returns `srtt + rttvar`). The
    /// two differ once the RTT is steady and well above `min_rto`: a
    /// connection whose RTT sits at 250 ms behind a queue times out after
    /// about 260 ms under RFC 6298's floor, but not before 450 ms in
    /// Linux, so a delay spike of 100-200 ms (a repair held in the
    /// tunnel's resequencer) is a spurious timeout in the one and nothing
    /// in the other. On in `TcpConfig::linux`. Turning it on found two
    /// tunnel faults that RFC 6298's shorter timeout had stepped around
    /// (the fault swarm's seeds 2015 and 80): a resequencer batch paced
    /// at a rate its arrivals had long outrun
    /// (`braid_core::reorder::Resequencer::episode_interval`), and repair
    /// copies booking a slow path's pacer seconds ahead
    /// (`braid_core::sender::Sender::resend`).
    #[serde(default)]
    pub min_rto_on_variation: bool,
    /// Ceiling on the backed-off RTO (ns-2 `maxrto_`, RFC 6298 Section 2.5).
    #[serde(with = "secs_f64")]
    pub max_rto: Duration,
    /// Clock granularity of the RTT estimator (ns-2 `tcpTick_`): samples
    /// are whole ticks and the RTO is a whole number of ticks.
    #[serde(with = "secs_f64")]
    pub tick: Duration,
    /// Ceiling on the exponential backoff multiplier (ns-2 stops doubling
    /// `t_backoff_` at 64).
    pub max_backoff: u32,
    /// Congestion control: ns-2's NewReno (the paper's) or CUBIC
    /// (RFC 9438, as Linux). CUBIC also counts slow-start growth per packet
    /// acknowledged (RFC 3465 with L = ∞, as Linux).
    pub congestion: Congestion,
    /// HyStart's delay detection ends slow start (CUBIC only; Linux's
    /// default).
    pub hystart: bool,
    /// TCP timestamps (RFC 7323): every ACK of new data measures the RTT
    /// of the newest packet it covers (Karn's rule does not apply, the
    /// echo says which transmission is answered) and ends the timer's
    /// backoff, as Linux's `tcp_ack_update_rtt` does. Without them
    /// (ns-2) the backoff lasts until a packet sent after the timeout is
    /// acknowledged.
    pub timestamps: bool,
    /// ECN (RFC 3168): packets are ECN-capable, the receiver echoes CE
    /// marks, and the sender reduces its window once per window of data
    /// for them as for a loss, without retransmitting. Off in the paper
    /// and in Linux's default (it only accepts ECN when asked).
    pub ecn: bool,
    /// Lost retransmissions are detected as Linux's RACK (RFC 8985
    /// Section 6.2) does: a retransmission neither acknowledged nor SACKed
    /// once a packet sent after it was delivered, and that packet's round
    /// trip plus SRTT/4 have passed since it left, counts as lost again.
    /// In SACK recovery it is resent; in the loss state a timeout began,
    /// fast recovery starts (Linux `FLAG_LOST_RETRANS`), instead of
    /// waiting for the retransmission timer. Needs `timestamps` or CUBIC
    /// (for send times).
    pub rack: bool,
    /// TCP-PRISM (PRISM Section 6.2.2; SPECS.md §1.3), the sender-side
    /// change PRISM pairs with its reverse-path controller. Needs `sack`.
    /// An ACK carrying a NACK ([`super::Nack`]) retransmits exactly the
    /// listed packets at once and sets cwnd ← p·cwnd (Additive Increase,
    /// Proportional Decrease), ssthresh ← the new cwnd (SPECS.md's reading
    /// where the paper is silent). The NACKed packets are the whole loss
    /// scoreboard: duplicate ACKs never start a recovery and no other
    /// un-SACKed hole is retransmitted; everything else, the RTO included,
    /// is TCP-SACK.
    pub prism: bool,
    /// Linux's reordering response (`sender::reorder`): the duplicate-ACK
    /// threshold follows the reordering measured from SACKs, and a recovery
    /// that timestamps show was spurious is undone. PRISM's testbed TCP
    /// (Linux 2.4, Section 7.1.2). Undo needs `timestamps`.
    pub reordering: bool,
    /// Linux's undo of a spurious timeout (`sender::spurious_rto`): an ACK
    /// of new data echoing a timestamp older than the timeout's first
    /// retransmission puts back the window and ssthresh the timeout took
    /// and stops its go-back-N. On in [`TcpConfig::linux`]; needs
    /// `timestamps`.
    #[serde(default)]
    pub rto_undo: bool,
    /// Linux's pacing of its own sending (`sender::pacing`): new packets
    /// leave no faster than 200 % of cwnd/SRTT in slow start and 120 %
    /// after. The lab's kernel paces so (README, "Simulated vs lab"): on
    /// in [`TcpConfig::linux`]. Off, the sender sends a window's growth
    /// back to back, as a sender without pacing does.
    #[serde(default)]
    pub pacing: bool,
}

/// Which congestion controller the sender runs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Congestion {
    #[default]
    NewReno,
    Cubic,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1460,
            header_bytes: 40,
            max_cwnd_pkts: 50,
            init_cwnd_pkts: 1,
            init_ssthresh_pkts: u32::MAX,
            max_burst: 4,
            dupack_threshold: 3,
            delayed_ack: false,
            delack_timeout: Duration::from_millis(100),
            sack: false,
            initial_rto: Duration::from_secs(3),
            min_rto: Duration::from_millis(200),
            min_rto_on_variation: false,
            max_rto: Duration::from_secs(64),
            tick: Duration::from_millis(10),
            max_backoff: 64,
            congestion: Congestion::NewReno,
            hystart: false,
            timestamps: false,
            ecn: false,
            rack: false,
            prism: false,
            reordering: false,
            rto_undo: false,
            pacing: false,
        }
    }
}

impl TcpConfig {
    /// A Linux-like TCP as the lab's iperf3 runs it: CUBIC with HyStart,
    /// SACK, initial window 10 (RFC 6928), no max-burst but Linux's
    /// pacing (`pacing`: the lab's kernel paces its sending even without
    /// the fq qdisc), delayed ACKs with Linux's 40 ms minimum,
    /// RTO 1 s initially and `SRTT + max(4 RTTVAR, 200 ms)` after (Linux's
    /// floor on the variation term, `min_rto_on_variation`),
    /// 1 ms clock, timestamps (52-byte headers), the undo of a timeout
    /// they show was spurious (`rto_undo`) and a receive window of
    /// `rwnd_pkts` packets. `mss` is 1448 on a 1500-byte path and 1386
    /// through the tunnel (inner MTU 1438).
    pub fn linux(mss: u32, rwnd_pkts: u32) -> TcpConfig {
        TcpConfig {
            mss_bytes: mss,
            header_bytes: 52,
            max_cwnd_pkts: rwnd_pkts,
            init_cwnd_pkts: 10,
            init_ssthresh_pkts: u32::MAX,
            max_burst: 0,
            dupack_threshold: 3,
            delayed_ack: true,
            delack_timeout: Duration::from_millis(40),
            sack: true,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            min_rto_on_variation: true,
            max_rto: Duration::from_secs(120),
            tick: Duration::from_millis(1),
            max_backoff: 64,
            congestion: Congestion::Cubic,
            hystart: true,
            timestamps: true,
            ecn: false,
            rack: true,
            prism: false,
            reordering: false,
            rto_undo: true,
            pacing: true,
        }
    }
}

impl TcpConfig {
    /// Bytes on the wire for one full data packet.
    pub fn wire_bytes(&self) -> u32 {
        self.mss_bytes + self.header_bytes
    }

    /// The same configuration with nonsensical values replaced by the
    /// smallest meaningful ones (windows of at least one packet, a nonzero
    /// tick), so the state machines never divide by zero or stall.
    pub(crate) fn sanitized(&self) -> TcpConfig {
        let mut c = self.clone();
        c.max_cwnd_pkts = c.max_cwnd_pkts.max(1);
        c.init_cwnd_pkts = c.init_cwnd_pkts.clamp(1, c.max_cwnd_pkts);
        c.init_ssthresh_pkts = c.init_ssthresh_pkts.clamp(2, c.max_cwnd_pkts.max(2));
        c.dupack_threshold = c.dupack_threshold.max(1);
        // TCP-PRISM reads SACK blocks to know what has left the network.
        c.sack |= c.prism;
        c.max_backoff = c.max_backoff.max(1);
        if c.tick.is_zero() {
            c.tick = Duration::from_nanos(1);
        }
        c
    }
}

/// Durations as floating-point seconds in configuration files.
mod secs_f64 {
    use super::Duration;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let v = f64::deserialize(d)?;
        Duration::try_from_secs_f64(v)
            .map_err(|_| D::Error::custom(format!("invalid duration {v} s")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_fields_take_ns2_defaults_and_durations_are_seconds() {
        let c: TcpConfig = serde_json::from_str(r#"{"sack": true, "min_rto": 1.0}"#).unwrap();
        assert!(c.sack);
        assert_eq!(c.min_rto, Duration::from_secs(1));
        assert_eq!(c.max_cwnd_pkts, 50);
        assert_eq!(c.wire_bytes(), 1500);
        let back: TcpConfig = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        assert!(serde_json::from_str::<TcpConfig>(r#"{"tick": -1.0}"#).is_err());
    }
}
