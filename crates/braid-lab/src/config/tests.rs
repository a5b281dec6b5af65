use super::*;

const GOOD: &str = r#"
name = "two-equal"
[[path]]
name = "a"
rate_mbit = 10.0
delay_ms = 20.0
queue_bytes = 50000
[[path]]
name = "b"
rate_mbit = 10.0
down_rate_mbit = 20.0
delay_ms = 20.0
loss = 0.01
"#;

fn err(text: &str) -> String {
    LabConfig::from_toml_str(text, "t.toml")
        .unwrap_err()
        .to_string()
}

#[test]
fn parses_and_resolves() {
    let c = LabConfig::from_toml_str(GOOD, "t.toml").unwrap();
    assert_eq!(c.paths.len(), 2);
    let a = c.resolve(0, Direction::Up);
    assert_eq!(a.rate_bps, 10e6);
    assert_eq!(a.delay_s, 0.020);
    assert_eq!(a.queue_bytes, 50000);
    assert_eq!(a.loss, LossSpec::None);
    let b = c.resolve(1, Direction::Down);
    assert_eq!(b.rate_bps, 20e6);
    // default queue = one BDP of the direction's rate over the RTT.
    assert_eq!(b.queue_bytes, bdp_bytes(20.0, 40.0));
    assert_eq!(b.loss, LossSpec::Bernoulli(0.01));
    assert_eq!(c.sum_rate_mbit(Direction::Up), 20.0);
    assert_eq!(c.best_path(Direction::Down), 1);
    assert_eq!(c.best_path(Direction::Up), 0);
    assert_eq!(a.ecn_mark_bytes, None);
    let e = LabConfig::from_toml_str(
        &GOOD.replace(
            "queue_bytes = 50000",
            "queue_bytes = 50000\necn_mark_bytes = 30000",
        ),
        "t",
    )
    .unwrap();
    assert_eq!(e.resolve(0, Direction::Down).ecn_mark_bytes, Some(30000));
}

#[test]
fn roundtrips_through_toml() {
    let mut c = LabConfig::from_toml_str(GOOD, "t.toml").unwrap();
    c.paths[0].gilbert = None;
    c.paths[0].trace = vec![TraceEntry {
        at_s: 1.0,
        rate_mbit: Some(5.0),
        ..Default::default()
    }];
    let back = LabConfig::from_toml_str(&c.to_toml_string(), "rt").unwrap();
    assert_eq!(back, c);
}

#[test]
fn unknown_key_is_named() {
    let e = err("name = \"x\"\n[[path]]\nname = \"a\"\nrate_mbps = 10.0\n");
    assert!(e.contains("rate_mbps"), "{e}");
    assert!(e.contains("t.toml"), "{e}");
    assert!(e.contains("did you mean `rate_mbit`"), "{e}");
}

#[test]
fn unknown_top_level_key_is_named() {
    let e = err("name = \"x\"\npaths = 3\n");
    assert!(e.contains("paths"), "{e}");
}

#[test]
fn missing_rate_is_named() {
    let e = err("name = \"x\"\n[[path]]\nname = \"a\"\ndelay_ms = 5.0\n");
    assert!(e.contains("path[0].rate_mbit"), "{e}");
    assert!(e.contains("set rate_mbit"), "{e}");
}

#[test]
fn bad_values_are_named() {
    let base = "name = \"x\"\n[[path]]\nname = \"a\"\nrate_mbit = 10.0\n";
    let cases = [
        ("rate_mbit = -1.0\n", "path[1].rate_mbit"),
        ("rate_mbit = 5.0\ndelay_ms = -3.0\n", "path[1].delay_ms"),
        ("rate_mbit = 5.0\nloss = 5.0\n", "path[1].loss"),
        ("rate_mbit = 5.0\nqueue_bytes = 100\n", "path[1].queue_bytes"),
        ("rate_mbit = 5.0\nloss = 0.1\ngilbert = { p_good_bad = 0.1, p_bad_good = 0.1 }\n", "path[1].gilbert"),
        ("rate_mbit = 5.0\ngilbert = { p_good_bad = 0.1, p_bad_good = 2.0 }\n", "path[1].gilbert.p_bad_good"),
        ("rate_mbit = 5.0\ntrace = [ { at_s = 2.0, rate_mbit = 1.0 }, { at_s = 1.0, rate_mbit = 2.0 } ]\n", "path[1].trace[1].at_s"),
        ("rate_mbit = 5.0\ntrace = [ { at_s = 2.0 } ]\n", "path[1].trace[0]"),
        ("rate_mbit = 5000.0\n", "path[1].rate_mbit"),
        ("rate_mbit = 5.0\nqueue_bytes = 20000\necn_mark_bytes = 20000\n", "path[1].ecn_mark_bytes"),
        ("rate_mbit = 5.0\nrlc = { block_error = 1.0, retx_ms = 8.0 }\n", "path[1].rlc.block_error"),
        ("rate_mbit = 5.0\nrlc = { block_error = 0.1, retx_ms = -1.0 }\n", "path[1].rlc.retx_ms"),
        ("rate_mbit = 5.0\nrlc = { block_error = 0.1, retx_ms = 8.0, max_attempts = 0 }\n", "path[1].rlc.max_attempts"),
    ];
    for (extra, key) in cases {
        let text = format!("{base}[[path]]\nname = \"b\"\n{extra}");
        let e = err(&text);
        assert!(e.contains(&format!("`{key}`")), "expected {key} in: {e}");
    }
    let e = err(&format!("{base}[[path]]\nname = \"a\"\nrate_mbit = 1.0\n"));
    assert!(e.contains("path[1].name"), "{e}");
    assert!(err("name = \"x\"\n").contains("`path`"));
    let e = err("name = \"x\"\n[[path]]\nname = \"a\"\nrate_mbit = \"10\"\n");
    assert!(e.contains("rate_mbit") && e.contains("hint"), "{e}");
}

/// `rlc` reaches both directions of its path, with four attempts unless
/// the file says otherwise, and round-trips (the emulator gets the config
/// as TOML).
#[test]
fn rlc_jitter_applies_to_both_directions() {
    let text = "name = \"x\"\n[[path]]\nname = \"a\"\nrate_mbit = 10.0\nrlc = { block_error = 0.1, retx_ms = 8.0 }\n[[path]]\nname = \"b\"\nrate_mbit = 10.0\n";
    let c = LabConfig::from_toml_str(text, "t").unwrap();
    let want = RlcConfig {
        block_error: 0.1,
        retx_ms: 8.0,
        max_attempts: 4,
    };
    for dir in Direction::BOTH {
        assert_eq!(c.resolve(0, dir).rlc, Some(want));
        assert_eq!(c.resolve(1, dir).rlc, None);
    }
    let back = LabConfig::from_toml_str(&c.to_toml_string(), "t").unwrap();
    assert_eq!(back, c);
}

#[test]
fn one_direction_rate_is_enough_only_if_both_set() {
    let e = err("name = \"x\"\n[[path]]\nname = \"a\"\nup_rate_mbit = 5.0\n");
    assert!(e.contains("down direction"), "{e}");
    LabConfig::from_toml_str(
        "name = \"x\"\n[[path]]\nname = \"a\"\nup_rate_mbit = 5.0\ndown_rate_mbit = 50.0\n",
        "t",
    )
    .unwrap();
}

#[test]
fn shipped_lab_files_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../lab");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "toml") {
            load_config(&p).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 3);
}
