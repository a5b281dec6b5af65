use super::*;

const OK: &str = r#"
listen = "127.0.0.1:0"
server = "127.0.0.1:51820"
[[client]]
name = "alice"
addr = "192.0.2.10"
rate_kbps = 800
[[client]]
name = "bob"
addr = "192.0.2.11:4000"
rate_kbps = 800
"#;

#[test]
fn a_relay_file_parses_and_errors_name_the_key() {
    let s = parse(OK).unwrap();
    assert_eq!(s.clients.len(), 2);
    assert_eq!(s.clients[1].port, Some(4000));
    assert_eq!(s.report_every, Some(Duration::from_secs(60)));
    let e = format!("{:#}", parse(&OK.replace("800", "0")).unwrap_err());
    assert!(e.contains("client[0].rate_kbps"), "{e}");
    let e = format!(
        "{:#}",
        parse(&OK.replace("192.0.2.10", "alice.example")).unwrap_err()
    );
    assert!(e.contains("client[0].addr"), "{e}");
    let e = format!(
        "{:#}",
        parse("listen = \"127.0.0.1:0\"\nserver = \"127.0.0.1:1\"\n").unwrap_err()
    );
    assert!(e.contains("[[client]]"), "{e}");
    let e = format!("{:#}", parse(&OK.replace("51820", "")).unwrap_err());
    assert!(e.contains("`server`"), "{e}");
}

#[test]
fn only_listed_clients_are_admitted() {
    let mut a = Admission::new(parse(OK).unwrap().clients);
    let sa = |s: &str| s.parse::<SocketAddr>().unwrap();
    assert_eq!(a.client_of(sa("192.0.2.10:1234")), Some(0));
    assert_eq!(a.client_of(sa("192.0.2.10:9")), Some(0), "any port");
    assert_eq!(a.client_of(sa("192.0.2.11:4000")), Some(1));
    assert_eq!(a.client_of(sa("192.0.2.11:4001")), None, "wrong port");
    assert_eq!(a.client_of(sa("192.0.2.99:4000")), None);
    assert_eq!(a.refused, 2);
}

/// 800 kbit/s is 100 kB/s: after the burst (at least one 64 KiB datagram)
/// a second of 1000-byte datagrams passes about 100 of them.
#[test]
fn the_rate_limit_holds_each_client_to_its_rate_per_direction() {
    let mut a = Admission::new(parse(OK).unwrap().clients);
    let t0 = Instant::now();
    let mut passed = 0;
    for k in 0..2000u64 {
        let now = t0 + Duration::from_micros(500 * k); // 2000 per second offered
        if a.allow(0, Direction::Up, now, 1000) {
            passed += 1;
        }
    }
    // One second: 100 kB of rate plus the 65.5 kB burst.
    assert!((150..=175).contains(&passed), "{passed}");
    let c = a.counters().next().unwrap().1.clone();
    assert_eq!(c.up_packets, passed);
    assert_eq!(c.up_limited, 2000 - passed);
    // The other direction and the other client have their own buckets.
    assert!(a.allow(0, Direction::Down, t0 + Duration::from_secs(1), 1000));
    assert!(a.allow(1, Direction::Up, t0 + Duration::from_secs(1), 1000));
}
