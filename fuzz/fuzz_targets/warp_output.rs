//! warp's text report and its JSON aggregate (a real warp as the load tool, `arbiter warp-parse`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for ops in [judge::warp::warp_output::parse_warp_text(text), judge::warp::warp_output::parse_warp_json(text)].into_iter().flatten() {
        for op in ops {
            assert!(!op.op.is_empty());
        }
    }
});
