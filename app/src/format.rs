//! Formatting shared by pages: the same text on the server and in the browser.

/// Epoch milliseconds as `YYYY-MM-DD HH:MM UTC` (no time-zone database needed, same on both sides).
pub fn utc_minutes(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = judge::units::civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

/// A git SHA shortened for tables; other refs pass through.
pub fn short_ref(r: &str) -> &str {
    if r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit()) {
        &r[..10]
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
