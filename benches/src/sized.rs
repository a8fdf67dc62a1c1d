//! (to be written: the synthetic toolsets of 10 / 150 / 1 000 tools for the dispatch comparison)
