//! The TUN device behind a trait, as wireguard-go's `tun.Device`, with an
//! in-memory fake like its `tuntest.NewChannelTUN`: tests run the whole
//! daemon over channels, without root and without touching the host.

use std::future::Future;
use std::io;
use std::net::Ipv4Addr;
use std::sync::Arc;

use braid_core::conn::TunnelParams;
use tokio::sync::{mpsc, Mutex};

/// Reads and writes whole IP packets.
pub trait Tun: Send + Sync + 'static {
    /// One packet from the host's stack into `buf`; its length.
    fn recv(&self, buf: &mut [u8]) -> impl Future<Output = io::Result<usize>> + Send;
    /// One packet to the host's stack.
    fn send(&self, packet: &[u8]) -> impl Future<Output = io::Result<()>> + Send;
}

/// Reads packets from `tun` into `tx` until the channel closes or the
/// device fails, on a task of its own: both daemons' event loops take
/// packets from the host this way. The task ends with the error that
/// stopped it; the event loops watch for that with [`reader_stopped`] and
/// exit non-zero, so that the service manager restarts a daemon that can
/// no longer read its device instead of leaving it up half-dead.
pub fn spawn_reader<T: Tun>(
    tun: Arc<T>,
    tx: mpsc::Sender<Vec<u8>>,
) -> tokio::task::JoinHandle<io::Error> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65_535];
        loop {
            match tun.recv(&mut buf).await {
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).await.is_err() {
                        return io::Error::new(io::ErrorKind::BrokenPipe, "the event loop is gone");
                    }
                }
                Err(e) => return e,
            }
        }
    })
}

/// Waits for the TUN reader `h` (if any) to stop and says why, as the
/// error the daemon exits with.
pub async fn reader_stopped(h: Option<&mut tokio::task::JoinHandle<io::Error>>) -> anyhow::Error {
    let Some(h) = h else {
        return std::future::pending().await;
    };
    match h.await {
        Ok(e) => anyhow::anyhow!(
            "reading the TUN device failed ({e}); exiting so that the service manager restarts braid"
        ),
        Err(e) => anyhow::anyhow!("the TUN reader stopped ({e}); exiting"),
    }
}

/// Makes the client's TUN device once the server assigned an address.
pub trait TunFactory: Send + 'static {
    type Tun: Tun;
    fn create(&mut self, params: &TunnelParams) -> io::Result<Self::Tun>;
}

/// A kernel TUN device (tun-rs).
pub struct SystemTun {
    dev: tun_rs::AsyncDevice,
    name: String,
}

impl SystemTun {
    /// Creates (and brings up) device `name` with `address/prefix_len` and `mtu`.
    pub fn create(
        name: &str,
        address: Ipv4Addr,
        prefix_len: u8,
        mtu: u16,
    ) -> io::Result<SystemTun> {
        let dev = tun_rs::DeviceBuilder::new()
            .name(name)
            .ipv4(address, prefix_len, None)
            .mtu(mtu)
            // Down until IPv6 is off (below).
            .enable(false)
            .build_async()
            .map_err(|e| {
                let why = if e.raw_os_error() == Some(libc::EBUSY) {
                    "a device of that name is in use by another process (another braid instance?); set another tun.name".to_string()
                } else {
                    "braid needs root or CAP_NET_ADMIN and /dev/net/tun".to_string()
                };
                io::Error::new(
                    e.kind(),
                    format!("cannot create TUN device `{name}` ({e}); {why}"),
                )
            })?;
        let name = dev.name().unwrap_or_else(|_| name.to_string());
        // The tunnel carries IPv4 only; keep the kernel's IPv6 link-local
        // chatter (router solicitations, MLD) off it. Best effort. Done
        // before the device goes up, or its first solicitations would be
        // counted as `drop_not_ipv4` at every start.
        let _ = std::fs::write(
            format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6"),
            "1\n",
        );
        dev.enabled(true).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot bring up TUN device `{name}`: {e}"),
            )
        })?;
        Ok(SystemTun { dev, name })
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Tun for SystemTun {
    async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.dev.recv(buf).await
    }
    async fn send(&self, packet: &[u8]) -> io::Result<()> {
        self.dev.send(packet).await.map(|_| ())
    }
}

/// The client's kernel TUN device, created on `Established`, with routes.
pub struct SystemTunFactory {
    pub name: String,
    pub routes: Vec<braid_core::conn::Ipv4Net>,
}

impl TunFactory for SystemTunFactory {
    type Tun = SystemTun;
    fn create(&mut self, p: &TunnelParams) -> io::Result<SystemTun> {
        let tun = SystemTun::create(&self.name, p.address, p.prefix_len, p.mtu)?;
        for r in &self.routes {
            super::net::add_route(r, tun.name())?;
        }
        Ok(tun)
    }
}

/// An in-memory TUN device: what the daemon writes shows up on the
/// [`ChannelTunPeer`]'s receiver, what the peer sends the daemon reads.
pub struct ChannelTun {
    from_host: Mutex<mpsc::Receiver<Vec<u8>>>,
    to_host: mpsc::Sender<Vec<u8>>,
}

/// The "host stack" side of a [`ChannelTun`].
pub struct ChannelTunPeer {
    /// Packets the host sends into the tunnel.
    pub tx: mpsc::Sender<Vec<u8>>,
    /// Packets the tunnel delivered to the host.
    pub rx: mpsc::Receiver<Vec<u8>>,
}

/// A connected [`ChannelTun`] and its peer; channels hold `capacity` packets.
pub fn channel_tun(capacity: usize) -> (ChannelTun, ChannelTunPeer) {
    let (tx, from_host) = mpsc::channel(capacity);
    let (to_host, rx) = mpsc::channel(capacity);
    (
        ChannelTun {
            from_host: Mutex::new(from_host),
            to_host,
        },
        ChannelTunPeer { tx, rx },
    )
}

impl Tun for ChannelTun {
    async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let p = self
            .from_host
            .lock()
            .await
            .recv()
            .await
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "channel TUN closed"))?;
        let n = p.len().min(buf.len());
        buf[..n].copy_from_slice(&p[..n]);
        Ok(n)
    }
    async fn send(&self, packet: &[u8]) -> io::Result<()> {
        self.to_host
            .send(packet.to_vec())
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "channel TUN closed"))
    }
}

/// Hands out one prepared [`ChannelTun`] (tests).
pub struct ChannelTunFactory(pub Option<ChannelTun>);

impl TunFactory for ChannelTunFactory {
    type Tun = ChannelTun;
    fn create(&mut self, _: &TunnelParams) -> io::Result<ChannelTun> {
        self.0
            .take()
            .ok_or_else(|| io::Error::other("the channel TUN was already used"))
    }
}
