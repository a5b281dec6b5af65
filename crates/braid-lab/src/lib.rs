//! braid lab
