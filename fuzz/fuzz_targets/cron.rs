//! A schedule's cron expression: parsed, then asked for its last tick at a few instants.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(cron) = judge::cron::Cron::parse(text) {
        for now in [0_i64, 1_764_633_600_000, 4_102_444_800_000] {
            if let Some(tick) = cron.last_tick(now) {
                assert!(tick <= now, "{text:?}: tick {tick} after {now}");
            }
        }
    }
});
