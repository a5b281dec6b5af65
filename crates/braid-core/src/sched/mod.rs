//! Schedulers: which path carries the next packet.
