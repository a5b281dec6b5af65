//! Stand-alone emulator binary: `braid-lab-emu <lab.toml>`.
//!
//! Used by the tests (and until the `braid lab emulate FILE` subcommand
//! exists); `topo::up` runs it inside the `braid-emu` namespace.

fn main() {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: braid-lab-emu <lab.toml>");
        std::process::exit(2);
    };
    let cfg = match braid_lab::load_config(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match braid_lab::run_emulator(&cfg) {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("braid-lab emulator: {e:#}");
            std::process::exit(1);
        }
    }
}
