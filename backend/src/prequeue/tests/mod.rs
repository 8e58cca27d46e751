//! Larger tests of the prequeue core: the seed's hierarchical case end to end, and property
//! tests of the round, submission and preemption invariants.

mod backfill_props;
mod budget;
pub mod fixtures;
mod naive;
mod preemption_props;
mod props;
mod scenarios;
mod sharing_props;
