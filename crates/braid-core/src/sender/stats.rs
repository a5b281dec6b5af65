//! The sender's counters: sender-wide ([`SenderStats`]) and the repair
//! counters of each path ([`PathRepairStats`]).

/// Sender-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub sent: u64,
    pub acked: u64,
    pub lost_fifo: u64,
    pub lost_timeout: u64,
    pub lost_evicted: u64,
    /// Feedback entries that matched nothing in flight (late, duplicate, forged).
    pub feedback_unmatched: u64,
    pub pair_samples: u64,
    /// Packets declared lost whose feedback came after all.
    pub spurious_losses: u64,
    /// No usable path when a packet was offered.
    pub no_path: u64,
    /// Packets sent on a path out of use, no path being usable
    /// (`Sender::blind_path`).
    pub sent_blind: u64,
    /// Packets put in a pacing queue (not sent at once).
    pub paced: u64,
    /// Packets dropped because their pacing queue was over its bound.
    pub pacing_drops: u64,
    /// Times a paced packet left later than its path's catch-up allowance
    /// and the rest of the path's schedule slipped, and by how much in
    /// all (`Sender::catch_up_allowance`): how often the sending process
    /// ran too late to keep its pace.
    pub pacing_slips: u64,
    pub pacing_slip_ns: u64,
    /// First packets of pairs held for their partner (`SenderConfig::pair_hold`).
    pub pair_holds: u64,
    /// Packets declared lost because a NACK named them.
    pub lost_nack: u64,
    /// Repair copies sent (ARQ).
    pub repairs_sent: u64,
    /// Of those, copies that waited in their path's pacing queue, its
    /// pacer booked beyond the catch-up allowance (`Sender::resend`).
    pub repairs_paced: u64,
    /// Path losses that came with a rising or standing queue (congestion,
    /// R-MTP §3.2): each lowered the path's rate estimate (not compounding)
    /// and was repaired like any other.
    pub losses_congestion: u64,
    /// Lost packets given up: too old, too many attempts, or their payload
    /// was no longer retained.
    pub repairs_abandoned: u64,
    /// Losses left to FEC (reactive parity) instead of a resend.
    pub repairs_fec: u64,
    /// Feedback entries reporting a copy on another path than the one the
    /// packet was last sent on (the original arrived after all, or the repair did).
    pub feedback_other_copy: u64,
    /// Originals reported from their own path after they were given up and
    /// repaired elsewhere (counted here whether or not the repair was
    /// acknowledged first): each gave its path a round-trip sample that
    /// Karn's rule would have dropped (`Sender::late_original`).
    pub late_originals: u64,
    /// Reports of a repaired packet's latest copy from the path it went
    /// on, the report that brings the path's count of them to the copies
    /// sent there: each a round-trip sample Karn's rule would have dropped
    /// (`Record::report_here`).
    pub latest_copy_samples: u64,
    /// Times a path's base one-way delay followed a lasting rise of its
    /// delay (`OwdEstimator::follow_rise`; a pacing sender only).
    pub delay_rises: u64,
    /// Packets taken off a path whose rate fell, for repair on another
    /// (`sender/stranded.rs`): they would have arrived far later there.
    pub stranded: u64,
    /// Of those, packets put back on their path because no other could
    /// take the copy (`Sender::unstrand`).
    pub unstranded: u64,
    /// Packets moved out of a path's pacing queue, before they left, to a
    /// path that delivers them sooner (`sender/requeue.rs`).
    pub requeued: u64,
    /// Times a path went quiet: its packets overdue while the other paths
    /// reported later ones (`sender/quiet.rs`).
    pub quiet_paths: u64,
    /// Redundant copies sent (the redundant mode, `crate::redundancy`),
    /// and their bytes on the paths (inner packet plus tunnel overhead):
    /// what redundancy cost.
    pub redundant_copies: u64,
    pub redundant_bytes: u64,
    /// Second copies of repairs, on another path, while the repair's path
    /// loses packets (`Sender::copy_repair`).
    pub repair_copies: u64,
}

/// Repair counters of one path.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct PathRepairStats {
    /// Losses of this path that were repaired (a copy was sent).
    pub losses_repaired: u64,
    /// Losses of this path taken for congestion and left to the inner transport.
    pub losses_congestion: u64,
    /// Repair copies this path carried.
    pub repairs_carried: u64,
    /// The latest loss rate the peer's receiver reported for this path
    /// (NACK frames; loss events per packet).
    pub peer_loss_rate: f64,
    /// Redundant copies this path carried, and their bytes.
    pub copies_carried: u64,
    pub copy_bytes_carried: u64,
}
