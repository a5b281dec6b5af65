//! The sending half of a tunnel direction.
