//! Durations, sizes and dates as suites, launches and imports write them.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = judge::units::parse_duration(text);
    if let Ok(size) = judge::units::parse_size(text) {
        assert!(size.is_finite() && size >= 0.0, "{text:?} → {size}");
    }
    let _ = judge::units::parse_date(text);
    let _ = judge::units::parse_utc_ms(text);
    let _ = suite::warp::parse_workload(text);
});
