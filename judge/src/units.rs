//! Sizes as people write them: `17179869184`, `16GiB`, `16 GB`, `512MiB`.

/// Bytes from a size: a plain number, or a number with KiB/MiB/GiB/TiB (powers of two) or KB/MB/GB/TB
/// (powers of ten); `B` is accepted and case does not matter.
pub fn parse_size(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("{text:?} is not a size; write e.g. 17179869184, 16GiB or 16GB"))?;
    let factor = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kib" => 1024.0,
        "mib" => 1024f64.powi(2),
        "gib" => 1024f64.powi(3),
        "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        other => return Err(format!("unknown size unit {other:?} in {text:?}; use KiB, MiB, GiB, TiB (or KB, MB, GB, TB)")),
    };
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("{text:?} must be a positive size"));
    }
    Ok(value * factor)
}

/// Days since 1970-01-01 → proleptic Gregorian (year, month, day) — H. Hinnant's civil-from-days.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Proleptic Gregorian date → days since 1970-01-01 (the inverse of [`civil_from_days`]).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD` → days since 1970-01-01, or why it is not a date.
pub fn parse_date(text: &str) -> Result<i64, String> {
    let bad = || format!("{text:?} is not a date of the form YYYY-MM-DD");
    let mut parts = text.trim().splitn(3, '-');
    let (y, m, d) = (parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d): (i64, u32, u32) = (y.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?, d.parse().map_err(|_| bad())?);
    let days = days_from_civil(y, m, d);
    if !(1..=12).contains(&m) || civil_from_days(days) != (y, m, d) {
        return Err(bad());
    }
    Ok(days)
}

/// A strict ISO 8601 time as git prints it (`%aI`: "2026-12-07T13:04:05+01:00", or "…Z") in ms since
/// the epoch, so a page can show it in its own format; `None` for anything else.
pub fn iso_to_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let (date, rest) = text.split_once('T')?;
    let days = parse_date(date).ok()?;
    if rest.len() < 8 {
        return None;
    }
    let (clock, zone) = rest.split_at(8);
    let mut hms = clock.split(':').map(|p| p.parse::<i64>().ok().filter(|_| p.len() == 2));
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    let offset_min = match zone {
        "Z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) && &z[3..4] == ":" => {
            let (oh, om): (i64, i64) = (z[1..3].parse().ok()?, z[4..6].parse().ok()?);
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (oh * 60 + om)
        }
        _ => return None,
    };
    Some(((days * 86_400 + h * 3600 + m * 60 + s) - offset_min * 60) * 1000)
}

/// A git SHA's first ten characters (the whole text when shorter).
pub fn short_sha(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

/// A duration in words, the one format every page, chart and the CLI use: "850 ms", "12.4 s",
/// "3 min 05 s", "1 h 02 min".
pub fn fmt_duration_ms(ms: i64) -> String {
    let ms = ms.max(0);
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else if ms < 3_600_000 {
        format!("{} min {:02} s", ms / 60_000, ms % 60_000 / 1000)
    } else {
        format!("{} h {:02} min", ms / 3_600_000, ms % 3_600_000 / 60_000)
    }
}

/// [`fmt_duration_ms`] of whole seconds ("12 s" rather than "12.0 s": a clock that ticks by the second).
pub fn fmt_duration_s(s: f64) -> String {
    let s = s.max(0.0).round() as i64;
    match s {
        0..60 => format!("{s} s"),
        _ => fmt_duration_ms(s * 1000),
    }
}

/// Three significant digits, no exponent for everyday values: "0.00123", "12.3", "1234".
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 0.001 {
        format!("{v:.3}")
    } else {
        format!("{v:.1e}")
    }
}

/// The UTC days `since` and `until` (`YYYY-MM-DD`, both inclusive; either may be absent or blank) as
/// epoch milliseconds `[since, until)`, with the field named in an error.
pub fn day_range(since: Option<&str>, until: Option<&str>) -> Result<(Option<i64>, Option<i64>), String> {
    const DAY_MS: i64 = 86_400_000;
    let day = |name: &str, v: Option<&str>| -> Result<Option<i64>, String> {
        v.map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| parse_date(s).map(|d| d * DAY_MS).map_err(|e| format!("{name}: {e}")))
            .transpose()
    };
    let (from, to) = (day("since", since)?, day("until", until)?.map(|u| u + DAY_MS));
    if let (Some(s), Some(u)) = (from, to) {
        if s >= u {
            return Err("since: the first day is after the last (until)".into());
        }
    }
    Ok((from, to))
}

/// Bytes for people, in binary units: "933 MiB", "1.5 GiB", "100 B".
pub fn fmt_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut i) = (b, 0);
    while v.abs() >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v.abs() >= 100.0 || i == 0 {
        format!("{v:.0} {}", UNITS[i])
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn utc_rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC): a finelog row's `ts`.
pub fn utc_rfc3339_ms(ms: i64) -> String {
    let secs = utc_rfc3339(ms.div_euclid(1000));
    format!("{}.{:03}Z", secs.trim_end_matches('Z'), ms.rem_euclid(1000))
}

/// A timestamp as rows carry it — `2026-12-02T15:40:01.123Z`, `2026-12-02 15:40:01` (naive: UTC), with or
/// without fractions — or an integer of epoch milliseconds, as epoch milliseconds.
pub fn parse_utc_ms(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Ok(ms) = t.parse::<i64>() {
        return Some(ms);
    }
    let t = t.trim_end_matches('Z');
    let (date, time) = t.split_once(['T', ' '])?;
    let days = parse_date(date).ok()?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    // Two digits each: a sign or a huge number is no time of day (and cannot overflow what follows).
    let field = |p: &str| (p.len() == 2 && p.bytes().all(|b| b.is_ascii_digit())).then(|| p.parse::<i64>().ok()).flatten();
    let mut h = hms.splitn(3, ':').map(field);
    let (hh, mi, ss) = (h.next()??, h.next()??, h.next()??);
    if hh > 23 || mi > 59 || ss > 60 || frac.is_empty() || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let ms: i64 = format!("{frac:0<3}")[..3].parse().ok()?;
    days.checked_mul(86_400)?.checked_add(hh * 3600 + mi * 60 + ss)?.checked_mul(1000)?.checked_add(ms)
}

/// "1 trial an arm", "3 trials an arm": the plan's size in the launch preview and `arbiter launch --dry-run`.
pub fn trials_an_arm(n: u64) -> String {
    if n == 1 {
        "1 trial an arm".into()
    } else {
        format!("{n} trials an arm")
    }
}

/// "10s", "1.5s", "2m", "500ms" or plain seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v * scale <= 86_400.0 => Ok(std::time::Duration::from_secs_f64(v * scale)),
        _ => Err(format!("{text:?} is not a duration (e.g. 10s, 1.5s, 2m, 500ms)")),
    }
}

/// Signed percent with one decimal and a real minus sign: "+27.4 %", "−0.9 %".
pub fn fmt_pct(p: f64) -> String {
    if p.abs() < 0.05 {
        return "±0.0 %".into();
    }
    if p >= crate::stats::MAX_STATED_PCT {
        return format!("≥ +{:.1} %", crate::stats::MAX_STATED_PCT);
    }
    let sign = if p < 0.0 { "−" } else { "+" };
    format!("{sign}{:.1} %", p.abs())
}

#[cfg(test)]
mod tests {

    #[test]
    fn timestamps_of_rows_round_trip() {
        let ms = 1_795_000_000_123;
        assert_eq!(super::parse_utc_ms(&super::utc_rfc3339_ms(ms)), Some(ms));
        assert_eq!(super::utc_rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::parse_utc_ms("1970-01-01 00:00:01.5"), Some(1500));
        assert_eq!(super::parse_utc_ms("1970-01-01T00:01:00"), Some(60_000));
        assert_eq!(super::parse_utc_ms("42"), Some(42));
        for bad in ["", "yesterday", "1970-13-01T00:00:00", "1970-01-01T25:00:00", "1970-01-01T00:00:00.x", "1970-01-01T-1:00:00"] {
            assert_eq!(super::parse_utc_ms(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn fuzz_found_a_negative_minute_overflowing_the_timestamp() {
        // scripts/fuzz.sh units: a minute field of -6222… passed "mi > 59" and overflowed the sum.
        let crash = "1026-11-02T04:-6222222222222225:21.62222222222222222222222222222222222222";
        assert_eq!(super::parse_utc_ms(crash), None);
        assert_eq!(super::parse_utc_ms("1026-11-02T04:+5:21"), None);
    }
    use super::{iso_to_ms, parse_date, parse_size, trials_an_arm, utc_rfc3339};

    #[test]
    fn one_trial_is_singular() {
        assert_eq!((trials_an_arm(1), trials_an_arm(2)), ("1 trial an arm".to_string(), "2 trials an arm".to_string()));
    }

    #[test]
    fn dates() {
        assert_eq!(parse_date("1970-01-01"), Ok(0));
        assert_eq!(parse_date("2026-11-29").unwrap() * 86_400, 1_795_910_400);
        assert_eq!(utc_rfc3339(parse_date("2024-02-29").unwrap() * 86_400), "2024-02-29T00:00:00Z");
        for bad in ["2026-02-30", "2026-13-01", "26-11-29", "2026/11/29", "", "2026-11-2x"] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn utc_times() {
        assert_eq!(utc_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_rfc3339(1_784_187_731), "2026-07-16T07:42:11Z");
        assert_eq!(utc_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1024").unwrap(), 1024.0);
        assert_eq!(parse_size("16GiB").unwrap(), 16.0 * 1024f64.powi(3));
        assert_eq!(parse_size("16 gb").unwrap(), 16e9);
        assert_eq!(parse_size("1.5MiB").unwrap(), 1.5 * 1048576.0);
        assert!(parse_size("12 parsecs").unwrap_err().contains("unknown size unit"));
        assert!(parse_size("GiB").unwrap_err().contains("is not a size"));
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn git_iso_times_read_as_utc() {
        assert_eq!(iso_to_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(iso_to_ms("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(iso_to_ms("2026-12-07T12:30:00-02:30"), iso_to_ms("2026-12-07T15:00:00Z"));
        for bad in ["", "2026-12-07", "2026-12-07T25:00:00Z", "2026-12-07T12:00:00+0100", "yesterday", "2026-13-01T00:00:00Z"] {
            assert_eq!(iso_to_ms(bad), None, "{bad:?}");
        }
    }
}
