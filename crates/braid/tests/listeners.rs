//! The metrics endpoint under connection floods: connections beyond the
//! bound are closed at once, and it serves again once they go.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use braid::daemon::listen::MAX_CONNECTIONS;
use braid::daemon::{serve_metrics, StatusRequest};
use braid::status::StatusReport;
use braid_core::conn::{Counters, ServerStatus};
use tokio::sync::mpsc;

fn get(addr: std::net::SocketAddr) -> String {
    let mut t = TcpStream::connect(addr).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    t.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    let _ = t.read_to_string(&mut body);
    body
}

#[tokio::test]
async fn metrics_connections_are_bounded() {
    let (tx, mut rx) = mpsc::channel::<StatusRequest>(4);
    tokio::spawn(async move {
        while let Some(reply) = rx.recv().await {
            let s = ServerStatus {
                counters: Counters::default(),
                peers: vec![],
            };
            let _ = reply.send(StatusReport::from_server(&s, Duration::from_secs(1)));
        }
    });
    let (addr, _task) = serve_metrics("127.0.0.1:0".parse().unwrap(), tx)
        .await
        .unwrap();
    let result = tokio::task::spawn_blocking(move || {
        assert!(get(addr).contains("braid_drop_kernel_rxq_total"));
        // Idle connections take every slot...
        let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| TcpStream::connect(addr).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        // ...so one more is closed without an answer, at once.
        let mut extra = TcpStream::connect(addr).unwrap();
        extra
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut buf = [0u8; 16];
        let t0 = std::time::Instant::now();
        let n = extra.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "closed without an answer");
        assert!(t0.elapsed() < Duration::from_secs(1));
        // Once they go, it serves again.
        drop(idle);
        std::thread::sleep(Duration::from_millis(200));
        get(addr)
    })
    .await
    .unwrap();
    assert!(result.starts_with("HTTP/1.1 200"), "{result}");
}
