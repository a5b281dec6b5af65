//! The one contract by which everything drives a tunnel endpoint: the
//! daemon around real sockets and a TUN device, the connection tests'
//! `Pair`, and the simulator's shipped-tunnel world.
//!
//! As quinn-proto: datagrams and inner packets go in with `handle_*` and
//! `send_packet`, outputs (datagrams to send, inner packets to deliver,
//! events) come out of `poll_output`, and the driver sleeps until
//! `poll_timeout` and then calls `handle_timeout`. Every call takes `now`;
//! nothing reads a clock. The only difference between the two sides is
//! where a datagram came from: the client knows the path (its socket), the
//! server only the peer's address (its one socket), hence [`Endpoint::From`].
//!
//! Load is the driver's judgement, not the core's (the core sees neither
//! the driver's queues nor its CPU), so it is an argument of
//! [`Endpoint::handle_datagram_loaded`]: a server under load answers
//! handshake initiations without a valid MAC2 with a cookie reply instead
//! of a Diffie-Hellman (WireGuard, Section 5.4.7). A client never answers
//! initiations and ignores the flag.

use std::net::SocketAddr;

use super::{Connection, Output, Server};
use crate::path::PathId;
use crate::time::Instant;

/// A tunnel endpoint driven by `handle_*`/`poll_*` calls.
pub trait Endpoint {
    /// Where an incoming datagram came from.
    type From: Copy;
    /// One datagram arrived (the driver is not under load).
    fn handle_datagram(&mut self, now: Instant, from: Self::From, datagram: &[u8]) {
        self.handle_datagram_loaded(now, from, datagram, false)
    }
    /// One datagram arrived while the driver is (`under_load`) or is not
    /// under load; see the module documentation.
    fn handle_datagram_loaded(
        &mut self,
        now: Instant,
        from: Self::From,
        datagram: &[u8],
        under_load: bool,
    );
    /// One inner IP packet to carry to the other side.
    fn send_packet(&mut self, now: Instant, packet: &[u8]);
    /// Runs due timers; extra calls are no-ops.
    fn handle_timeout(&mut self, now: Instant);
    /// When `handle_timeout` next has work.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The next output, until `None`.
    fn poll_output(&mut self) -> Option<Output>;
}

impl Endpoint for Connection {
    type From = PathId;
    fn handle_datagram_loaded(
        &mut self,
        now: Instant,
        from: PathId,
        datagram: &[u8],
        _under_load: bool,
    ) {
        Connection::handle_datagram(self, now, from, datagram)
    }
    fn send_packet(&mut self, now: Instant, packet: &[u8]) {
        Connection::send_packet(self, now, packet)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Connection::handle_timeout(self, now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Connection::poll_timeout(self)
    }
    fn poll_output(&mut self) -> Option<Output> {
        Connection::poll_output(self)
    }
}

impl Endpoint for Server {
    type From = SocketAddr;
    fn handle_datagram_loaded(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
        under_load: bool,
    ) {
        Server::handle_datagram_loaded(self, now, from, datagram, under_load)
    }
    fn send_packet(&mut self, now: Instant, packet: &[u8]) {
        Server::send_packet(self, now, packet)
    }
    fn handle_timeout(&mut self, now: Instant) {
        Server::handle_timeout(self, now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Server::poll_timeout(self)
    }
    fn poll_output(&mut self) -> Option<Output> {
        Server::poll_output(self)
    }
}
