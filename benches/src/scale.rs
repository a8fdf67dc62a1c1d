//! (to be written: the synthetic toolsets of the scale benchmark)
