//! A `baseline_compare.csv` (imports, `arbiter gate`): strict or lenient by the first byte. Rows that
//! parse also go through the gate's judging without a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let label = (flags & 2 != 0).then_some("fuzz");
    let _ = judge::warp::compare_csv::parse_compare_csv("baseline_compare.csv", text, label, flags & 1 != 0);
});
