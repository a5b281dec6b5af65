//! Runs an MPLOT scenario and prints one line per (scheme, x), with the
//! competing TCP flows and the per-path timeouts:
//! `cargo run --release -p braid-sim --example mplot_run -- scenarios/mplot-fig3.toml [seeds] [duration_s] [values...]`.

use braid_sim::mplot::{self, MplotScenario};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().expect("a scenario file");
    let mut sc = MplotScenario::load(std::path::Path::new(path)).unwrap_or_else(|e| panic!("{e}"));
    if let Some(s) = args.get(1) {
        sc.mplot.seeds = s.parse().expect("seeds");
    }
    if let Some(d) = args.get(2) {
        sc.mplot.duration_s = d.parse().expect("duration");
    }
    if args.len() > 3 {
        sc.mplot.values = args[3..]
            .iter()
            .map(|v| v.parse().expect("value"))
            .collect();
    }
    let t = std::time::Instant::now();
    if std::env::var_os("MPLOT_RUN_DETAIL").is_some() {
        // One run per (scheme, x) with the sender's and receiver's counters.
        for scheme in sc.schemes() {
            for &x in &sc.mplot.values {
                let o = braid_sim::mplot::world::run(&mplot::spec_for(
                    &sc,
                    scheme,
                    x,
                    sc.mplot.first_seed,
                ));
                println!(
                    "{:<9} x {:>5} goodput {:>7.3} thr {:>7.3} sent {:>7.3} Mb/s {} pkts arrived {} dups {} rfec {} timeouts {}",
                    scheme.name(), x, o.goodput_mbps, o.throughput_mbps, o.sent_mbps, o.packets_sent, o.arrived, o.duplicates, o.rfec, o.timeouts
                );
            }
        }
        return;
    }
    let r = mplot::run(&sc, 0);
    println!("{}", r.name);
    for row in &r.rows {
        println!(
            "{:<9} x {:>5} goodput {:>7.3} thr {:>7.3} sent {:>7.3} tcp {:>6.3}/{:>6.3} delay {:>7.1} ±{:>7.1} to {:>7.0} pest_std {:.3} paths {:?}",
            row.scheme,
            row.x,
            row.goodput_kbps / 1e3,
            row.throughput_kbps / 1e3,
            row.sent_kbps / 1e3,
            row.tcp_throughput_kbps / 1e3,
            row.tcp_goodput_kbps / 1e3,
            row.delay_mean_ms,
            row.delay_std_ms,
            row.timeouts,
            row.loss_estimate_std,
            row.path_throughput_kbps
                .iter()
                .map(|v| (v / 10.0).round() / 100.0)
                .collect::<Vec<_>>()
        );
    }
    eprintln!("{:.1} s", t.elapsed().as_secs_f64());
}
