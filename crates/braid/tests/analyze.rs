//! `braid analyze` end to end: JSON keys, the paper's numbers, errors.

use std::process::Command;

fn braid(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("braid runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn json_has_the_bounds_and_the_split() {
    let (ok, out, err) = braid(&[
        "analyze",
        "--path",
        "15mbit,1ms,1000B",
        "--path",
        "5mbit,1ms,1000B",
        "--format",
        "json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["split"][0].as_f64(), Some(0.75));
    assert_eq!(v["ratio_bound_random"]["rho_max"].as_f64(), Some(7.0));
    let rho = v["ratio_bound_periodic"]["rho_max"].as_f64().unwrap();
    assert!((4.38..4.39).contains(&rho), "{rho}");
    assert_eq!(v["dupack_bound"]["dupacks"].as_u64(), Some(3));
    assert_eq!(v["verdict"]["plain_striping_safe"].as_bool(), Some(false));
}

#[test]
fn reads_lab_and_scenario_files() {
    let (ok, out, err) = braid(&["analyze", "lab/fast-slow.toml", "--transfer-bytes", "100k"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("unused, delay exceeds the completion time: slow"),
        "{out}"
    );
    let (ok, out, err) = braid(&["analyze", "scenarios/pet-table1.toml"]);
    assert!(ok, "{err}");
    assert!(out.contains("NOT SAFE"), "{out}");
}

#[test]
fn bad_input_says_what_to_write() {
    let (ok, _, err) = braid(&["analyze", "--path", "10mbit"]);
    assert!(!ok);
    assert!(err.contains("RATE,DELAY"), "{err}");
    let (ok, _, err) = braid(&["analyze", "--path", "10mbit,5ms", "--beta", "1.5"]);
    assert!(!ok);
    assert!(err.contains("--beta"), "{err}");
    let (ok, _, err) = braid(&["analyze"]);
    assert!(!ok);
    assert!(err.contains("--path"), "{err}");
}
