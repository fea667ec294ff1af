//! Formatting shared by pages: the same text on the server and in the browser.

/// Epoch milliseconds as `YYYY-MM-DD HH:MM UTC` (no time-zone database needed, same on both sides).
pub fn utc_minutes(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = judge::units::civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

/// A workload fingerprint's fields as (name, value) text, strings unquoted.
pub fn fingerprint_fields(v: &serde_json::Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), str::to_string))).collect())
        .unwrap_or_default()
}

/// A workload fingerprint on one line: "sample=local/tiny, workers=2".
pub fn fingerprint_line(v: &serde_json::Value) -> String {
    fingerprint_fields(v).iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
}

/// A git SHA shortened for tables; other refs pass through.
pub fn short_ref(r: &str) -> &str {
    if r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()) {
        judge::units::short_sha(r)
    } else {
        r
    }
}

/// A duration in milliseconds as "850 ms", "12.4 s", "3 min 05 s", "1 h 02 min" (`judge::units`, the one format).
pub use judge::units::fmt_duration_ms as duration;

/// Signed percent with one decimal, a real minus sign and a unit: "+27.4 %", "−0.9 %", "±0.0 %".
pub fn pct(p: f64) -> String {
    judge::pipeline::report::fmt_pct(p)
}

/// Bytes as "933 MiB", "1.5 GiB".
pub fn bytes(b: f64) -> String {
    judge::units::fmt_bytes(b)
}

/// A stored suite definition's judging choices (`[judge]`, each field falling back to the default), and
/// whether the suite has a `[judge]` at all. The server reads the same fields through its
/// `SuiteDefinition::judge_method`; pages only have the stored JSON.
pub fn suite_judge_method(definition: &serde_json::Value) -> (judge::pipeline::MethodConfig, bool) {
    let d = judge::pipeline::MethodConfig::default();
    let j = &definition["judge"];
    let num = |k: &str, default: f64| j[k].as_f64().unwrap_or(default);
    let method = judge::pipeline::MethodConfig {
        alpha: num("alpha", d.alpha),
        cpu_margin_pct: num("cpu_margin_pct", d.cpu_margin_pct),
        elapsed_margin_pct: num("elapsed_margin_pct", d.elapsed_margin_pct),
        paired: false,
        no_regression: j["no_regression_pct"].as_f64().map_or(d.no_regression, judge::pipeline::method::NoRegression::At),
        max_no_regression_pct: num("max_no_regression_pct", d.max_no_regression_pct),
    };
    (method, j.is_object())
}


/// Percent-encodes a query value (suite and branch names are the free text links carry).
pub fn encode_query(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_percents_and_sizes() {
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(12_400), "12.4 s");
        assert_eq!(duration(185_000), "3 min 05 s");
        assert_eq!(duration(3_720_000), "1 h 02 min");
        assert_eq!(pct(-0.94), "−0.9 %");
        assert_eq!(bytes(933.0 * 1048576.0), "933 MiB");
    }

    #[test]
    fn utc_dates() {
        assert_eq!(utc_minutes(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_minutes(951_782_400_000), "2000-02-29 00:00 UTC");
        assert_eq!(utc_minutes(1_795_942_500_000), "2026-11-29 08:55 UTC");
        assert_eq!(utc_minutes(-60_000), "1969-12-31 23:59 UTC");
    }

    #[test]
    fn shas_shorten() {
        assert_eq!(short_ref("0123456789abcdef0123456789abcdef01234567"), "0123456789");
        assert_eq!(short_ref("main"), "main");
    }
}
