//! Scheduled baselines (#12, in progress): cron expressions in UTC, computed without a clock of their
//! own so that the ticker can be driven by a fast clock in tests.

pub mod cron;
