//! Helpers shared by the examples.
