//! The command-line tool as a user runs it.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

/// `braid demo --simulate | head -1`: the reader goes away after one line;
/// braid must end on SIGPIPE like any filter, not panic in `println!`.
#[test]
fn closed_stdout_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["demo", "--simulate"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run braid");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("braid demo"), "{first}");
    // The pipe's read end is dropped here.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // SIGPIPE, or success if everything was written before the pipe closed.
    assert!(
        out.status.signal() == Some(libc::SIGPIPE) || out.status.success(),
        "{:?}",
        out.status
    );
}

fn braid(args: &[&str], stdin: Option<&str>) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run braid");
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

/// `braid keygen --public-of -` reads the private key from stdin, as
/// `wg pubkey`, and agrees with `--out`'s public key; `braid showconf`
/// prints the effective configuration with the derived public key and
/// the per-instance defaults.
#[test]
fn keygen_from_stdin_and_showconf() {
    let dir = std::env::temp_dir().join(format!("braid-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("c.key");
    let o = braid(&["keygen", "--out", key.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let public = String::from_utf8(o.stdout).unwrap().trim().to_string();
    let private = std::fs::read_to_string(&key).unwrap();
    let o = braid(&["keygen", "--public-of", "-"], Some(&private));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8(o.stdout).unwrap().trim(), public);
    let o = braid(&["keygen", "--public-of", "-"], Some("not a key\n"));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("standard input"));

    let cfg = dir.join("laptop.toml");
    std::fs::write(
        &cfg,
        format!(
            "server = \"192.0.2.1:51820\"\nserver_public_key = \"{public}\"\nprivate_key_file = \"c.key\"\n\
             [tun]\nname = \"bond0\"\n[[path]]\nname = \"wlan\"\nbind = \"192.168.1.23\"\n"
        ),
    )
    .unwrap();
    let o = braid(&["showconf", cfg.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("role = \"client\""), "{text}");
    assert!(
        text.contains(&format!("public_key = \"{public}\"")),
        "{text}"
    );
    assert!(
        text.contains("control_socket = \"/run/braid/bond0.sock\""),
        "{text}"
    );
    assert!(text.contains("server = \"192.0.2.1:51820\""), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn lab_file(name: &str) -> String {
    format!("{}/../../lab/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

/// `braid sim run lab/NAME.toml --format json` prints the lab bench's
/// shape with the simulator's extra counts; a bad mode is named with the
/// choices.
#[test]
fn sim_run_lab_file_prints_the_lab_bench_shape() {
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["sim", "run", &lab_file("two-equal")])
        .args([
            "--modes",
            "single-best,braid-pet",
            "--duration",
            "4",
            "--omit",
            "1",
        ])
        .args(["--format", "json", "-q"])
        .output()
        .expect("run braid");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["scenario"], "two-equal");
    assert!(v["ceiling_share"].as_f64().unwrap() > 0.9);
    let r = v["results"].as_array().unwrap();
    assert_eq!(r[0]["mode"], "single-best");
    assert_eq!(r[1]["mode"], "braid-pet");
    for x in r {
        for k in [
            "goodput_mbps",
            "share_of_sum",
            "dupacks",
            "retransmits",
            "timeouts",
            "residual_loss",
        ] {
            assert!(x[k].is_number(), "{k} in {x}");
        }
        assert_eq!(x["path_mbps"].as_array().unwrap().len(), 2);
    }
    // Two equal paths through the tunnel: well above one path alone.
    assert!(r[1]["share_of_sum"].as_f64().unwrap() > r[0]["share_of_sum"].as_f64().unwrap() * 1.5);

    let bad = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args([
            "sim",
            "run",
            &lab_file("two-equal"),
            "--modes",
            "braid-fast",
        ])
        .output()
        .expect("run braid");
    assert!(!bad.status.success());
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(e.contains("braid-fast") && e.contains("braid-pet"), "{e}");
}

/// `braid lab bench --wait-paths` beyond a minute, or without a tunnel
/// mode, is refused before any lab is set up, naming the flag.
#[test]
fn lab_bench_wait_paths_is_bounded() {
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["lab", "bench", &lab_file("two-equal"), "--wait-paths", "99"])
        .output()
        .expect("run braid");
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--wait-paths") && e.contains("60"), "{e}");
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args([
            "lab",
            "bench",
            &lab_file("two-equal"),
            "--modes",
            "single-best",
        ])
        .args(["--wait-paths", "3"])
        .output()
        .expect("run braid");
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--wait-paths") && e.contains("braid-pet"), "{e}");
}

/// `braid lab bench --cross-lead` without `--cross-tcp` is refused before
/// any lab is set up, naming the flag that is missing.
#[test]
fn lab_bench_cross_lead_needs_a_competing_flow() {
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["lab", "bench", &lab_file("two-equal"), "--cross-lead", "5"])
        .output()
        .expect("run braid");
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("--cross-lead") && e.contains("--cross-tcp"),
        "{e}"
    );
}

/// `--download` is refused, with the reason, where it cannot apply:
/// braid-send always sends client to proxy, and the competing flow of
/// `--cross-tcp` goes the other way.
#[test]
fn lab_bench_download_is_refused_where_it_cannot_apply() {
    for (extra, want) in [
        (&["--modes", "braid-send"][..], "braid-send"),
        (&["--cross-tcp", "a"][..], "--cross-tcp"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_braid"))
            .args(["lab", "bench", &lab_file("two-equal"), "--download"])
            .args(extra)
            .output()
            .expect("run braid");
        assert!(!out.status.success());
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains("--download") && e.contains(want), "{e}");
    }
}

/// `braid sim run ARGS`, which must fail: what it said.
fn sim_refused(args: &[&str]) -> String {
    let out = sim_run(args);
    assert!(!out.status.success(), "{args:?} was accepted");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A scenario file of `scenarios/`.
fn scenario_file(name: &str) -> String {
    format!("{}/../../scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

/// `braid sim run ARGS -q`.
fn sim_run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["sim", "run"])
        .args(args)
        .arg("-q")
        .output()
        .expect("run braid")
}

/// `braid sim run LAB --handshake` opens the transfer with a SYN through
/// the tunnel and reports as without it; on a scenario file it is refused,
/// naming the flag and what it applies to.
#[test]
fn sim_run_handshake_applies_to_lab_files() {
    let out = sim_run(&[
        &lab_file("two-equal"),
        "--modes",
        "braid-pet",
        "--duration",
        "4",
        "--omit",
        "1",
        "--handshake",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let g = v["results"][0]["goodput_mbps"].as_f64().expect("goodput");
    assert!(g > 10.0, "{g} Mbit/s over two 10 Mbit/s paths");
    let out = sim_run(&[&scenario_file("pet-table1"), "--handshake"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--handshake") && e.contains("lab files"), "{e}");
}

/// `braid sim run LAB --cross-tcp PATH` runs a competing flow beside every
/// mode and reports it (`cross_tcp_mbps`, a `cross TCP` column); a path
/// the lab file lacks, a scenario file, and `--cross-lead` without
/// `--cross-tcp` are refused with what to do.
#[test]
fn sim_run_cross_tcp_reports_the_competing_flow_and_refuses_misuse() {
    let braid = sim_run;
    let two = lab_file("two-equal");
    let common = [
        "--modes",
        "mptcp,braid-pet",
        "--duration",
        "4",
        "--omit",
        "1",
    ];
    let mut args = vec![two.as_str(), "--cross-tcp", "b", "--format", "json"];
    args.extend(common);
    let out = braid(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    for r in v["results"].as_array().unwrap() {
        let c = r["cross_tcp_mbps"].as_f64().expect("cross_tcp_mbps");
        assert!(c > 1.0 && c < 10.0, "{r}");
    }
    let mut args = vec![two.as_str(), "--cross-tcp", "a"];
    args.extend(common);
    let table = braid(&args);
    assert!(String::from_utf8_lossy(&table.stdout).contains("cross TCP"));

    let e = sim_refused(&[&two, "--cross-tcp", "wifi"]);
    assert!(e.contains("wifi") && e.contains("a, b"), "{e}");
    let e = sim_refused(&[&two, "--cross-lead", "5"]);
    assert!(e.contains("--cross-tcp"), "{e}");
    let e = sim_refused(&[&scenario_file("pet-table1"), "--cross-tcp", "a"]);
    assert!(e.contains("lab files"), "{e}");
}

/// `braid sim run LAB --wait-paths SECONDS` runs as usual; a wait out of
/// range or on a scenario file is refused, naming the flag.
#[test]
fn sim_run_wait_paths_refuses_misuse() {
    let far = lab_file("far");
    let args = [
        far.as_str(),
        "--modes",
        "braid-pet",
        "--duration",
        "3",
        "--omit",
        "1",
        "--wait-paths",
        "2",
        "--format",
        "json",
    ];
    let out = sim_run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        v["results"][0]["goodput_mbps"].as_f64().unwrap() > 1.0,
        "{v}"
    );

    let e = sim_refused(&[&far, "--wait-paths", "100"]);
    assert!(e.contains("--wait-paths"), "{e}");
    let e = sim_refused(&[&scenario_file("pet-table1"), "--wait-paths", "1"]);
    assert!(e.contains("--wait-paths") && e.contains("lab files"), "{e}");
}

/// A swept scenario file with `[[path]]` tables (PRISM's figures, Phatak
/// et al.'s) runs as a scenario, not as a lab file, and prints one JSON row
/// per scheme and swept value, with the ideal sum where MTCP runs.
#[test]
fn sim_run_swept_scenario_prints_rows_per_scheme_and_x() {
    let dir = std::env::temp_dir().join(format!("braid-cli-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sweep.toml");
    std::fs::write(
        &file,
        r#"name = "tiny-prism"
duration_s = 5.0
schemes = ["PRISM", "MTCP"]
[sweep]
param = "links"
values = [1, 2]
[tcp]
sack = true
[[path]]
rate_kbps = 600
wired_delay_ms = 40
[[path]]
rate_kbps = 1200
wired_delay_ms = 60
"#,
    )
    .unwrap();
    let out = braid(
        &[
            "sim",
            "run",
            file.to_str().unwrap(),
            "--format",
            "json",
            "-q",
        ],
        None,
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["param"], "links");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4);
    for r in rows {
        assert!(r["scheme"].is_string() && r["x"].is_number(), "{r}");
        assert!(r["goodput_kbps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["ideal_kbps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["mean_buffer_pkts"].is_number(), "{r}");
    }
}
