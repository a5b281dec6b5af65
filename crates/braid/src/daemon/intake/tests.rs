use super::*;
use braid_core::crypto::handshake::INIT_MIN_LEN;

/// Datagrams queued in `rx` now.
fn drain(rx: &mut mpsc::Receiver<Datagram>) -> Vec<Datagram> {
    let mut v = Vec::new();
    while let Ok(d) = rx.try_recv() {
        v.push(d);
    }
    v
}

fn test_errors() -> RecvErrors {
    RecvErrors::new("UDP receive failed".into(), Arc::new(AtomicU64::new(0)))
}

#[tokio::test]
async fn initiations_admitted_per_source_data_apart_and_drops_mean_load() {
    let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let addr = sock.local_addr().unwrap();
    let clock = Clock::new();
    let mut intake = Intake::spawn(sock, None, clock, test_errors()).unwrap();
    assert!(!intake.under_load(clock.now()));
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut init = vec![0u8; 160];
    init[0] = TYPE_HANDSHAKE_INIT;
    for _ in 0..100 {
        tx.send_to(&init, addr).unwrap();
    }
    let data = [0x10u8; 40];
    for _ in 0..5 {
        tx.send_to(&data, addr).unwrap();
    }
    let mut got = (Vec::new(), Vec::new());
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        got.0.extend(drain(&mut intake.data));
        got.1.extend(drain(&mut intake.handshakes));
        let dropped = intake.drops().handshake_queue;
        if got.0.len() == 5 && got.1.len() as u64 + dropped == 100 {
            break;
        }
    }
    // Every data datagram in the data queue, in order, with its source.
    assert_eq!(got.0.len(), 5);
    assert!(got
        .0
        .iter()
        .all(|d| d.bytes == data && d.from == tx.local_addr().unwrap()));
    // One source: a burst of initiations admitted, the rest dropped and
    // counted at the cost of a read.
    let admitted = got.1.len() as u64;
    assert!(
        (ADMIT_BURST..=ADMIT_BURST + 2).contains(&admitted),
        "{admitted} admitted"
    );
    assert_eq!(intake.drops().handshake_queue, 100 - admitted);
    // Dropping initiations puts the server under load for a while.
    let now = clock.now();
    assert!(intake.under_load(now));
    assert!(intake.under_load(now + Duration::from_millis(900)));
    assert!(!intake.under_load(now + UNDER_LOAD_FOR + Duration::from_millis(1)));
    // The kernel dropped nothing here.
    assert_eq!(intake.drops().kernel_rxq, 0);
}

#[tokio::test]
async fn beyond_the_dh_budget_initiations_are_admitted_for_a_cookie_and_mac2_apart() {
    // Many sources (127.0.0.0/8 is all loopback), as a spoofed flood
    // would have: each within its own limit.
    let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let addr = sock.local_addr().unwrap();
    let clock = Clock::new();
    let mut intake = Intake::spawn(sock, None, clock, test_errors()).unwrap();
    let sources: Vec<std::net::UdpSocket> = (0..50)
        .map(|i| std::net::UdpSocket::bind(format!("127.0.1.{}:0", i + 1)).unwrap())
        .collect();
    let mut init = vec![0u8; INIT_MIN_LEN];
    init[0] = TYPE_HANDSHAKE_INIT;
    // 500 initiations without MAC2 (10 from each source, within its
    // limit): the DH budget's burst (200) and what it refills while
    // they arrive; the rest for a cookie only, which puts the server
    // under load. None is dropped.
    let mut got = Vec::new();
    for _ in 0..10 {
        for s in &sources {
            s.send_to(&init, addr).unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        got.extend(drain(&mut intake.handshakes));
    }
    for _ in 0..200 {
        got.extend(drain(&mut intake.handshakes));
        if got.len() >= 500 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(got.len(), 500);
    let cookie_only = intake.counters.cookie_only.load(Ordering::Relaxed);
    assert!(
        (100..=500 - ADMIT_ALL_BURST).contains(&cookie_only),
        "{cookie_only} for a cookie only"
    );
    assert_eq!(intake.drops().handshake_queue, 0);
    assert!(intake.under_load(clock.now()));
    // Retries with a MAC2 from 60 new addresses: their own budget's
    // burst, untouched by the flood above, and no more.
    let mut stamped = init.clone();
    *stamped.last_mut().unwrap() = 1;
    let retries: Vec<std::net::UdpSocket> = (0..60)
        .map(|i| std::net::UdpSocket::bind(format!("127.0.2.{}:0", i + 1)).unwrap())
        .collect();
    for s in &retries {
        s.send_to(&stamped, addr).unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..200 {
        got.extend(drain(&mut intake.handshakes));
        if got.len() >= ADMIT_MAC2_BURST as usize {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let late = drain(&mut intake.handshakes).len();
    let n = got.len() + late;
    assert!(
        (ADMIT_MAC2_BURST as usize..=ADMIT_MAC2_BURST as usize + 2).contains(&n),
        "{n} MAC2 retries admitted"
    );
    assert!(got.iter().all(|d| has_mac2(&d.bytes)));
    assert_eq!(intake.drops().handshake_queue, 60 - n as u64);
    assert!(!has_mac2(&init) && has_mac2(&stamped));
}

#[tokio::test]
async fn the_pair_is_read_data_first_and_kernel_drops_counted() {
    let make = |d| socket2::Socket::new(d, socket2::Type::DGRAM, None);
    let socks =
        super::super::steer::ServerSockets::bind("127.0.0.1:0".parse().unwrap(), make).unwrap();
    let addr = socks.data.local_addr().unwrap();
    let hs = socks.handshake;
    assert!(hs.is_some(), "the kernel took the pair");
    let clock = Clock::new();
    let mut intake = Intake::spawn(Arc::new(socks.data), hs, clock, test_errors()).unwrap();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut init = vec![0u8; INIT_MIN_LEN];
    init[0] = TYPE_HANDSHAKE_INIT;
    let data = [0x10u8; 40];
    // An initiation, data, and junk the handshake socket's filter
    // drops in the kernel.
    tx.send_to(&init, addr).unwrap();
    tx.send_to(&data, addr).unwrap();
    tx.send_to(&[0x55; 200], addr).unwrap();
    tx.send_to(&[0x13; 64], addr).unwrap();
    let mut got = (Vec::new(), Vec::new());
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        got.0.extend(drain(&mut intake.data));
        got.1.extend(drain(&mut intake.handshakes));
        if !got.0.is_empty() && !got.1.is_empty() {
            break;
        }
    }
    assert_eq!(got.0.len(), 1);
    assert_eq!(got.0[0].bytes, data);
    assert_eq!(got.1.len(), 1);
    assert_eq!(got.1[0].bytes, init);
    // The initiation came off the handshake socket; the kernel
    // dropped the junk and the daemon counted it without reading it.
    assert_eq!(intake.handshake_reads(), 1);
    let d = intake.drops();
    assert_eq!((d.kernel_handshake, d.malformed, d.kernel_rxq), (2, 0, 0));
}

#[tokio::test]
async fn a_full_handshake_queue_leaves_the_handshake_socket_to_the_kernel() {
    let make = |d| socket2::Socket::new(d, socket2::Type::DGRAM, None);
    let socks =
        super::super::steer::ServerSockets::bind("127.0.0.1:0".parse().unwrap(), make).unwrap();
    let addr = socks.data.local_addr().unwrap();
    let hs = socks.handshake;
    assert!(hs.is_some(), "the kernel took the pair");
    let clock = Clock::new();
    let mut intake = Intake::spawn(Arc::new(socks.data), hs, clock, test_errors()).unwrap();
    // Many sources, each within its admission limit, and a main loop
    // that takes nothing off the queue.
    let sources: Vec<std::net::UdpSocket> = (0..50)
        .map(|i| std::net::UdpSocket::bind(format!("127.0.3.{}:0", i + 1)).unwrap())
        .collect();
    let mut init = vec![0u8; INIT_MIN_LEN];
    init[0] = TYPE_HANDSHAKE_INIT;
    let fill = HANDSHAKE_QUEUE - HANDSHAKE_QUEUE_KEEP;
    for _ in 0..100 {
        if intake.handshake_reads() as usize > fill - HANDSHAKE_RESUME {
            break;
        }
        for s in &sources {
            s.send_to(&init, addr).unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The reader stopped short of the places kept for the data
    // socket, having read only what it could queue.
    let read = intake.handshake_reads();
    assert!(
        (fill - HANDSHAKE_RESUME + 1..=fill).contains(&(read as usize)),
        "{read} read"
    );
    assert_eq!(intake.handshakes.len() as u64, read);
    assert_eq!(intake.drops().handshake_queue, 0);
    // More initiations stay in the kernel, unread; data is still read,
    // and a retry with a MAC2 (steered to the data socket) finds its
    // place in the queue.
    for s in &sources {
        s.send_to(&init, addr).unwrap();
    }
    let data = [0x10u8; 40];
    sources[0].send_to(&data, addr).unwrap();
    let mut stamped = init.clone();
    *stamped.last_mut().unwrap() = 1;
    sources[1].send_to(&stamped, addr).unwrap();
    let mut got = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        got.extend(drain(&mut intake.data));
        if !got.is_empty() && intake.handshakes.len() as u64 > read {
            break;
        }
    }
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].bytes, data);
    assert_eq!(
        intake.handshake_reads(),
        read,
        "the full queue stopped the reads"
    );
    assert_eq!(intake.handshakes.len() as u64, read + 1);
    assert_eq!(intake.drops().handshake_queue, 0);
    // Once the main loop makes room, the reader takes what waited.
    let queued = drain(&mut intake.handshakes);
    assert!(queued.iter().any(|d| d.bytes == stamped));
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        if intake.handshake_reads() > read {
            break;
        }
    }
    assert!(intake.handshake_reads() > read);
}

#[tokio::test]
async fn malformed_datagrams_stop_at_the_reader_and_are_counted() {
    let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let addr = sock.local_addr().unwrap();
    let clock = Clock::new();
    let mut intake = Intake::spawn(sock, None, clock, test_errors()).unwrap();
    let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    // Unknown type bytes, a response and a cookie reply (never sent to
    // a server), and a transport packet too short for its header.
    let junk: [&[u8]; 4] = [&[0x55; 100], &[0x12; 92], &[0x13; 64], &[0x10; 8]];
    for j in junk {
        tx.send_to(j, addr).unwrap();
    }
    let good = [0x10u8; 40];
    tx.send_to(&good, addr).unwrap();
    let mut data = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        data.extend(drain(&mut intake.data));
        if !data.is_empty() {
            break;
        }
    }
    // Only the well-formed one was queued (datagrams are read in order).
    assert_eq!(data.len(), 1);
    assert_eq!(data[0].bytes, good);
    let d = intake.drops();
    assert_eq!(d.malformed, 4);
    assert_eq!(d.malformed_bytes, 100 + 92 + 64 + 8);
    // The core counts them as it would have.
    use braid_core::conn::{Ipv4Net, ServerConfig};
    use braid_core::crypto::PrivateKey;
    use rand_chacha::rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let cfg = ServerConfig::new(Ipv4Net::parse("10.77.0.0/24").unwrap(), vec![]);
    let mut server = Server::new(cfg, PrivateKey::generate(&mut rng), &mut rng).unwrap();
    server.set_intake_drops(d);
    let c = server.status(clock.now()).counters;
    assert_eq!((c.rx_datagrams, c.drop_malformed), (4, 4));
}

#[tokio::test]
async fn stale_datagrams_are_dropped_and_counted() {
    use braid_core::conn::{Ipv4Net, ServerConfig};
    use braid_core::crypto::PrivateKey;
    use rand_chacha::rand_core::SeedableRng;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let cfg = ServerConfig::new(Ipv4Net::parse("10.77.0.0/24").unwrap(), vec![]);
    let mut server = Server::new(cfg, PrivateKey::generate(&mut rng), &mut rng).unwrap();
    let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let clock = Clock::new();
    let mut intake = Intake::spawn(sock, None, clock, test_errors()).unwrap();
    let mut replies = ReplySources::default();
    let from: SocketAddr = "192.0.2.1:1".parse().unwrap();
    let datagram = |at| Datagram {
        from,
        local: None,
        bytes: vec![0x10; 40],
        at,
    };
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    // Received at the clock's origin, 150 ms ago: past the bound.
    intake.serve_data(datagram(Instant::ZERO), &mut server, &mut replies);
    assert_eq!(intake.drops().stale, 1);
    assert_eq!(server.status(clock.now()).counters.rx_datagrams, 0);
    intake.serve_data(datagram(clock.now()), &mut server, &mut replies);
    assert_eq!(intake.drops().stale, 1);
    assert_eq!(server.status(clock.now()).counters.rx_datagrams, 1);
    // The same for initiations, with their longer bound.
    let mut init = datagram(Instant::ZERO);
    init.bytes[0] = TYPE_HANDSHAKE_INIT;
    intake.serve_handshakes(init, &mut server, &mut replies);
    assert_eq!(intake.drops().stale, 1, "150 ms is within 500 ms");
}
