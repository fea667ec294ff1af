//! The rustfs driver's round files: `*_round_results.csv` and `*_median_summary.csv` (imports).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = judge::warp::rounds::parse_round_results("round_results.csv", text);
    let _ = judge::warp::rounds::parse_median_summary("median_summary.csv", text);
});
