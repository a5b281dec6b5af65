//! Accept loops that neither spin nor run out of file descriptors.
//!
//! `accept()` fails when the process is out of file descriptors (EMFILE)
//! and keeps failing while the connection waits in the backlog: a loop
//! that simply retries spins at 100 % CPU (1,100 idle connections to the
//! metrics port did that under systemd's default limit of 1024 files). So
//! a failed accept sleeps, 10 ms doubling to 1 s, and a success resets the
//! wait. Connections beyond [`MAX_CONNECTIONS`] at once are closed at once
//! instead of being served; each served one has a time limit already.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Connections one endpoint (metrics or control) serves at once.
pub const MAX_CONNECTIONS: usize = 64;
/// First and longest wait after a failed `accept()`.
const FIRST_WAIT: Duration = Duration::from_millis(10);
const LONGEST_WAIT: Duration = Duration::from_secs(1);

/// The wait after failed accepts.
#[derive(Debug)]
pub struct AcceptBackoff {
    wait: Duration,
    log: super::RateLimitedLog,
}

impl Default for AcceptBackoff {
    fn default() -> Self {
        AcceptBackoff {
            wait: FIRST_WAIT,
            log: super::RateLimitedLog::default(),
        }
    }
}

impl AcceptBackoff {
    /// After a successful accept.
    pub fn reset(&mut self) {
        self.wait = FIRST_WAIT;
    }

    /// After a failed accept: logs (rate-limited) and sleeps, longer each
    /// time in a row.
    pub async fn failed(&mut self, what: &str, err: &std::io::Error) {
        self.log.warn(what, err);
        tokio::time::sleep(self.bump()).await;
    }

    /// The wait for this failure; doubles the next one.
    fn bump(&mut self) -> Duration {
        let w = self.wait;
        self.wait = (self.wait * 2).min(LONGEST_WAIT);
        w
    }

    /// The wait the next failure would sleep.
    pub fn next_wait(&self) -> Duration {
        self.wait
    }
}

/// Bounds the connections served at once.
#[derive(Clone, Debug)]
pub struct ConnectionLimit(Arc<Semaphore>);

impl Default for ConnectionLimit {
    fn default() -> Self {
        Self::new(MAX_CONNECTIONS)
    }
}

impl ConnectionLimit {
    pub fn new(max: usize) -> Self {
        ConnectionLimit(Arc::new(Semaphore::new(max)))
    }

    /// A slot for one more connection, or `None` if all are taken (close
    /// the connection). The slot frees when the permit is dropped.
    pub fn try_take(&self) -> Option<OwnedSemaphorePermit> {
        self.0.clone().try_acquire_owned().ok()
    }
}

/// A listening socket whose connections [`serve`] accepts.
pub trait Accept: Send + 'static {
    type Stream: Send + 'static;
    fn accept_one(&self) -> impl Future<Output = std::io::Result<Self::Stream>> + Send;
}

impl Accept for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;
    async fn accept_one(&self) -> std::io::Result<Self::Stream> {
        self.accept().await.map(|(s, _)| s)
    }
}

impl Accept for tokio::net::TcpListener {
    type Stream = tokio::net::TcpStream;
    async fn accept_one(&self) -> std::io::Result<Self::Stream> {
        self.accept().await.map(|(s, _)| s)
    }
}

/// Accepts connections on `listener` forever, each served by `handle` in
/// a task of its own: a failed accept backs off ([`AcceptBackoff`], logged
/// as `what`), and a connection beyond [`MAX_CONNECTIONS`] is closed at
/// once.
pub async fn serve<L, H, F>(listener: L, what: &'static str, handle: H)
where
    L: Accept,
    H: Fn(L::Stream) -> F + Send + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let (mut backoff, limit) = (AcceptBackoff::default(), ConnectionLimit::default());
    loop {
        let stream = match listener.accept_one().await {
            Ok(s) => s,
            Err(e) => {
                backoff.failed(what, &e).await;
                continue;
            }
        };
        backoff.reset();
        let Some(permit) = limit.try_take() else {
            continue; // dropping the stream closes it
        };
        let served = handle(stream);
        tokio::spawn(async move {
            let _permit = permit;
            served.await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_frees_slots_on_drop() {
        let l = ConnectionLimit::new(2);
        let a = l.try_take().unwrap();
        let _b = l.try_take().unwrap();
        assert!(l.try_take().is_none());
        drop(a);
        assert!(l.try_take().is_some());
    }

    #[test]
    fn backoff_doubles_to_a_second_and_resets() {
        let mut b = AcceptBackoff::default();
        let waits: Vec<u128> = (0..10).map(|_| b.bump().as_millis()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        b.reset();
        assert_eq!(b.next_wait(), FIRST_WAIT);
    }

    #[tokio::test]
    async fn a_failed_accept_sleeps() {
        let mut b = AcceptBackoff::default();
        let e = std::io::Error::from_raw_os_error(libc::EMFILE);
        let t0 = std::time::Instant::now();
        b.failed("accept failed", &e).await;
        b.failed("accept failed", &e).await;
        assert!(t0.elapsed() >= Duration::from_millis(30));
        assert_eq!(b.next_wait(), Duration::from_millis(40));
    }
}
