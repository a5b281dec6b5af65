//! A nanosecond-resolution timer (Linux `timerfd`) for the main loops.
//!
//! tokio's timer wheel rounds sleeps up to whole milliseconds. The core
//! asks for wake-ups far finer than that: BMP paces in-order releases at a
//! fraction of the packet inter-arrival gap (PET/BMP Section V-B, tens of
//! microseconds at 100 Mbit/s), feedback is batched for up to 1 ms. With
//! millisecond sleeps a paced burst drains at one packet per millisecond,
//! which caps throughput near 1000 packets/s. A `timerfd` on
//! CLOCK_MONOTONIC (the clock `std::time::Instant` reads) wakes on time.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

pub struct PreciseTimer {
    fd: AsyncFd<OwnedFd>,
}

impl PreciseTimer {
    pub fn new() -> io::Result<PreciseTimer> {
        // SAFETY: plain syscall; the result is checked before use.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the OwnedFd is moved into the AsyncFd, which keeps it
        // open (and the same descriptor) for as long as it lives.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE)? };
        Ok(PreciseTimer { fd })
    }

    /// Fires once, `after` from now (at once if zero). Re-arming replaces
    /// the previous deadline and discards an unread expiry.
    pub fn arm(&self, after: Duration) -> io::Result<()> {
        let after = after.max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: after.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid descriptor and a fully initialised itimerspec.
        let r =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Resolves when the armed deadline passed. Cancel-safe.
    pub async fn wait(&self) -> io::Result<()> {
        loop {
            let mut guard = self.fd.readable().await?;
            let mut buf = [0u8; 8];
            // SAFETY: reading 8 bytes into an 8-byte buffer.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                )
            };
            if n == 8 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                guard.clear_ready();
                continue;
            }
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn fires_with_sub_millisecond_precision() {
        let t = PreciseTimer::new().unwrap();
        let mut waits = vec![Duration::ZERO; 100];
        for w in waits.iter_mut() {
            let start = std::time::Instant::now();
            t.arm(Duration::from_micros(50)).unwrap();
            t.wait().await.unwrap();
            *w = start.elapsed();
        }
        // Tokio's sleep rounds up to its 1 ms tick, so none of its waits is
        // shorter. The median, not the sum, so that a busy machine's
        // scheduling delays on some wake-ups do not decide the result.
        waits.sort();
        let median = waits[waits.len() / 2];
        assert!(
            median < Duration::from_micros(1000),
            "median wait {median:?} for 50 us"
        );
        // Re-arming discards a pending expiry.
        t.arm(Duration::from_micros(1)).unwrap();
        std::thread::sleep(Duration::from_millis(1));
        t.arm(Duration::from_millis(30)).unwrap();
        let s = std::time::Instant::now();
        t.wait().await.unwrap();
        assert!(s.elapsed() >= Duration::from_millis(25));
    }
}
