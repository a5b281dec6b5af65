//! `braid demo`: the quickest look at what braid does.
//!
//! As root (network namespaces available) it brings up the emulated lab
//! with three unequal paths (8, 4 and 2 Mbit/s; 10, 60 and 150 ms), moves
//! a TCP stream through the real encrypted tunnel with PET, prints the
//! aggregate and per-path throughput next to the best path alone, and
//! tears everything down. Without root, or when the programs the lab
//! starts are missing and cannot be installed, it says why in one line and
//! runs the simulated version: the PET/BMP Table I experiment with the same protocol core.

use braid_lab::preflight::{self, Installer, Lookup};
use braid_lab::{BenchOptions, LabConfig, Mode};
use braid_sim::{Scenario, SweepOptions};

/// The simulated demo's scenario.
pub const TABLE1: &str = include_str!("../../../scenarios/pet-table1.toml");
/// The lab demo's paths.
pub const THREE_PATHS: &str = include_str!("../../../lab/three-paths.toml");

pub fn run(simulate: bool, seconds: u32) -> anyhow::Result<()> {
    if !simulate {
        let installer: Installer = &preflight::apt_install;
        let can_apt = Lookup::from_env().find("apt-get").is_some();
        let why = fallback_reason(
            preflight::is_root(),
            &Lookup::from_env(),
            can_apt.then_some(installer),
        )
        .or_else(|| {
            braid_lab::topo::check_environment()
                .err()
                .map(|e| fallback_line(&format!("the lab cannot run here: {e}")))
        });
        match why {
            None => return lab_demo(seconds),
            Some(line) => println!("{line}\n"),
        }
    }
    simulated()
}

/// The one line printed when the demo falls back to the simulated run.
fn fallback_line(why: &str) -> String {
    format!("braid demo: running the simulated demo because {why}; for the real tunnel, fix that and run `sudo braid demo` again.")
}

/// Why the real-tunnel demo cannot run (one line, saying how to get it),
/// or `None` when it can: it needs root and every program of
/// [`preflight::LAB_TOOLS`], which are installed with `install` (apt-get,
/// as root) when missing. `lookup` is where programs are found, so that
/// the check can be tested with any `PATH`.
pub fn fallback_reason(root: bool, lookup: &Lookup, install: Option<Installer>) -> Option<String> {
    if !root {
        return Some(fallback_line(
            "the real-tunnel demo needs root (it creates network namespaces)",
        ));
    }
    preflight::ensure(preflight::LAB_TOOLS, lookup, install)
        .err()
        .map(|e| fallback_line(&e))
}

fn lab_demo(seconds: u32) -> anyhow::Result<()> {
    let cfg = LabConfig::from_toml_str(THREE_PATHS, "embedded lab/three-paths.toml")?;
    let rates = cfg.rates_mbit(braid_lab::Direction::Up);
    println!("braid demo: one TCP upload through the braid tunnel over three emulated paths");
    for (i, (p, r)) in cfg.paths.iter().zip(&rates).enumerate() {
        let delay_ms = cfg.resolve(i, braid_lab::Direction::Up).delay_s * 1e3;
        println!(
            "  {:<7} {:>4.1} Mbit/s, {:>5.1} ms one way",
            p.name, r, delay_ms
        );
    }
    println!("(network namespaces braid-cli/-emu/-prx/-srv, userspace link emulator, kernel CUBIC, {seconds} s per run)\n");
    let exe = std::env::current_exe()?;
    let _lock = braid_lab::topo::LabLock::acquire()?;
    braid_lab::up(&cfg, &crate::lab::emulator_command()?)?;
    let modes = vec![
        Mode::SingleBest,
        braid::labtunnel::mode("braid-pet", braid_core::sched::SchedulerKind::Pet, exe)?,
    ];
    let opts = BenchOptions {
        duration_s: seconds,
        omit_s: 2,
        ..Default::default()
    };
    let report = braid_lab::bench_with(&cfg, &modes, &opts);
    braid_lab::down()?;
    let report = report?;
    let sum: f64 = rates.iter().sum();
    println!(
        "{:<26} {:>9} {:>8}   per path (Mbit/s on the wire)",
        "", "Mbit/s", "of sum"
    );
    for r in &report.results {
        let label = match r.mode.as_str() {
            "single-best" => "best path alone (TCP)",
            _ => "braid (PET + resequencer)",
        };
        let paths: Vec<String> = r
            .path_mbps
            .iter()
            .zip(&cfg.paths)
            .map(|(m, p)| format!("{} {:.2}", p.name, m))
            .collect();
        println!(
            "{:<26} {:>9.2} {:>7.0}%   {}",
            label,
            r.goodput_mbps,
            100.0 * r.goodput_mbps / sum,
            paths.join(", ")
        );
    }
    println!("\nsum of the paths: {sum:.1} Mbit/s; the tunnel's headers cap TCP goodput at {:.1}% of it.", 100.0 * crate::lab::ceiling_share());
    println!("Compare with kernel MPTCP: `braid lab bench lab/three-paths.toml`.");
    Ok(())
}

fn simulated() -> anyhow::Result<()> {
    let sc = Scenario::parse(TABLE1, "embedded pet-table1.toml")?;
    println!("braid demo (simulated): one TCP download striped over three paths of 50, 100 and");
    println!(
        "200 kbit/s (PET/BMP Table I). The best path alone gives at most 194.7 kbit/s; the sum"
    );
    println!("of all three, after TCP/IP headers, is 340.7 kbit/s.\n");
    let out = braid_sim::run(
        &sc,
        &SweepOptions {
            progress: false,
            ..Default::default()
        },
    );
    println!(
        "{:<11} {:>8}  {:>8}  what it is",
        "scheme", "kbit/s", "dupacks"
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
    for x in &out.report.results {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_root_the_demo_says_so_and_how_to_get_the_real_one() {
        let line = fallback_reason(false, &Lookup::with_path("/nonexistent"), None).unwrap();
        assert!(
            line.contains("needs root") && line.contains("sudo braid demo"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn demo_preflight_names_each_missing_program() {
        let dir = std::env::temp_dir().join(format!("braid-demo-preflight-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let tools = preflight::LAB_TOOLS;
        for t in tools {
            preflight::stub_path_dir(&dir, tools, Some(t.program)).unwrap();
            let line = fallback_reason(true, &Lookup::with_path(&dir), None)
                .unwrap_or_else(|| panic!("no fallback with `{}` missing", t.program));
            assert!(line.contains(&format!("`{}`", t.program)), "{line}");
            assert!(
                line.contains(&format!("apt-get install {}", t.package)),
                "{line}"
            );
            assert!(line.contains("simulated"), "{line}");
            assert!(!line.contains('\n'));
        }
        preflight::stub_path_dir(&dir, tools, None).unwrap();
        assert_eq!(fallback_reason(true, &Lookup::with_path(&dir), None), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
