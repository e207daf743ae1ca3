//! CPU probe: spin-hint timing, TSC calibration, topology.
