//! zephyr.stage rows as CSV, JSON or JSONL (the import route and `arbiter compare` read them): the first
//! byte picks the format, the rest is the file. Any input is rows or an error naming where; rows that
//! parse judge without a panic, and every execution id is printable ASCII.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let source = match kind % 3 {
        0 => "rows.csv",
        1 => "rows.json",
        _ => "rows.jsonl",
    };
    if let Ok(rows) = judge::pipeline::rows::parse_rows(source, text) {
        for r in &rows {
            assert!(r.execution_id.bytes().all(|b| b.is_ascii_graphic()), "{:?}", r.execution_id);
            let _ = judge::pipeline::rows::execution_key(&r.execution_id);
        }
    }
    let _ = judge::pipeline::rows::execution_key(text);
});
