//! `braid demo`: the quickest look at what braid does. It runs the PET/BMP
//! Table I experiment (embedded, no files needed) in the deterministic
//! simulator with the shipped protocol core.

use braid_sim::{Scenario, SweepOptions};

/// The scenario the demo runs.
pub const TABLE1: &str = include_str!("../../../scenarios/pet-table1.toml");

pub fn run() -> anyhow::Result<()> {
    let sc = Scenario::parse(TABLE1, "embedded pet-table1.toml")?;
    println!("braid demo: one TCP download striped over three paths of 50, 100 and 200 kbit/s");
    println!("(simulated; PET/BMP Table I). The best path alone gives at most 194.7 kbit/s;");
    println!("the sum of all three, after TCP/IP headers, is 340.7 kbit/s.\n");
    let out = braid_sim::run(
        &sc,
        &SweepOptions {
            progress: false,
            ..Default::default()
        },
    );
    let r = &out.report;
    println!(
        "{:<11} {:>8}  {:>8}  {}",
        "scheme", "kbit/s", "dupacks", "what it is"
    );
    let what = |s: &str| match s {
        "MTCP" => "one TCP per path, summed (application-level striping)",
        "ASI" => "a single path as fast as all three together",
        "HBI" => "the best path alone",
        "EDPF" => "ideal earliest-delivery scheduler (knows the paths)",
        "WRR" => "weighted round robin, no resequencing",
        "WRR-BMP" => "weighted round robin + braid's resequencer",
        "PET-BMP" => "braid: packet-pair estimates + EDPF + resequencer",
        "PET" => "braid's scheduler without the resequencer",
        "MINRTT-BMP" => "MPTCP's lowest-RTT scheduler + resequencer",
        _ => "",
    };
    for x in &r.results {
        println!(
            "{:<11} {:>8.1}  {:>8.0}  {}",
            x.scheme,
            x.goodput_kbps,
            x.dupacks,
            what(&x.scheme)
        );
    }
    println!("\nRun any experiment with `braid sim run scenarios/<name>.toml` (`braid sim list`).");
    Ok(())
}
