//! The receiving half of a tunnel direction.
