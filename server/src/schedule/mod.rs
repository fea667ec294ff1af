//! Scheduled baselines: a suite's `[[schedules]]` (spec), cron ticks in UTC computed without a clock
//! of their own (`judge::cron`, pure, shared with the suite page), and the ticker that claims each due tick in the store and launches it (tick),
//! driven by an injected clock so that tests run it fast.

pub use judge::cron;
pub mod spec;
pub mod tick;
