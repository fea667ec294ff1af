//! Cron expressions (five fields, UTC): minute hour day-of-month month day-of-week, each `*`, a number,
//! a range `a-b`, a list `a,b`, or a step `*/n` / `a-b/n`; day-of-week 0–7 (0 and 7 are Sunday). As in
//! cron, when both day fields are restricted a day matches either. Pure: times are epoch milliseconds.

const MINUTE_MS: i64 = 60_000;

#[derive(Debug, Clone, PartialEq)]
pub struct Cron {
    minutes: Vec<bool>,
    hours: Vec<bool>,
    days: Vec<bool>,
    months: Vec<bool>,
    weekdays: Vec<bool>,
    days_restricted: bool,
    weekdays_restricted: bool,
}

fn field(text: &str, name: &str, lo: u32, hi: u32) -> Result<Vec<bool>, String> {
    let mut set = vec![false; hi as usize + 1];
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                (r, s.parse::<u32>().ok().filter(|s| *s > 0).ok_or_else(|| format!("{name}: step {s:?} is not a positive number"))?)
            }
            None => (part, 1),
        };
        let (a, b) = if range == "*" {
            (lo, hi)
        } else {
            let num = |t: &str| {
                t.parse::<u32>().ok().filter(|v| (lo..=hi).contains(v)).ok_or_else(|| format!("{name}: {t:?} is not a number in {lo}–{hi}"))
            };
            match range.split_once('-') {
                Some((a, b)) => (num(a)?, num(b)?),
                None => {
                    let v = num(range)?;
                    (v, if part.contains('/') { hi } else { v })
                }
            }
        };
        if a > b {
            return Err(format!("{name}: the range {a}-{b} runs backwards"));
        }
        (a..=b).step_by(step as usize).for_each(|v| set[v as usize] = true);
    }
    Ok(set)
}

impl Cron {
    pub fn parse(text: &str) -> Result<Cron, String> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        let [m, h, dom, mon, dow] = parts[..] else {
            return Err(format!("cron {text:?}: give five fields (minute hour day-of-month month day-of-week), in UTC"));
        };
        let mut weekdays = field(dow, "day-of-week", 0, 7)?;
        if weekdays[7] {
            weekdays[0] = true;
        }
        Ok(Cron {
            minutes: field(m, "minute", 0, 59)?,
            hours: field(h, "hour", 0, 23)?,
            days: field(dom, "day-of-month", 1, 31)?,
            months: field(mon, "month", 1, 12)?,
            weekdays,
            days_restricted: dom != "*",
            weekdays_restricted: dow != "*",
        })
    }

    fn matches(&self, minute_index: i64) -> bool {
        let day = minute_index.div_euclid(1440);
        let in_day = minute_index.rem_euclid(1440);
        let (_, month, dom) = crate::units::civil_from_days(day);
        let weekday = (day + 4).rem_euclid(7) as usize; // 1970-01-01 was a Thursday
        let day_ok = match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => self.days[dom as usize] || self.weekdays[weekday],
            (true, false) => self.days[dom as usize],
            (false, true) => self.weekdays[weekday],
            (false, false) => true,
        };
        day_ok && self.months[month as usize] && self.hours[(in_day / 60) as usize] && self.minutes[(in_day % 60) as usize]
    }

    /// The latest tick at or before `now` (within the last 366 days), in epoch ms.
    pub fn last_tick(&self, now: i64) -> Option<i64> {
        let start = now.div_euclid(MINUTE_MS);
        (0..366 * 1440).map(|k| start - k).find(|m| self.matches(*m)).map(|m| m * MINUTE_MS)
    }

    /// The first tick after `now`, in epoch ms.
    pub fn next_tick(&self, now: i64) -> Option<i64> {
        let start = now.div_euclid(MINUTE_MS) + 1;
        (0..366 * 1440).map(|k| start + k).find(|m| self.matches(*m)).map(|m| m * MINUTE_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i64, mo: u32, d: u32, h: i64, mi: i64) -> i64 {
        (crate::units::days_from_civil(y, mo, d) * 1440 + h * 60 + mi) * MINUTE_MS
    }

    #[test]
    fn ticks() {
        let nightly = Cron::parse("0 3 * * *").unwrap();
        assert_eq!(nightly.last_tick(at(2026, 11, 30, 2, 59)), Some(at(2026, 11, 29, 3, 0)));
        assert_eq!(nightly.last_tick(at(2026, 11, 30, 3, 0)), Some(at(2026, 11, 30, 3, 0)));
        assert_eq!(nightly.next_tick(at(2026, 11, 30, 3, 0)), Some(at(2026, 12, 1, 3, 0)));
        let weekdays = Cron::parse("*/15 9-17 * * 1-5").unwrap();
        // 2026-11-28 is a Saturday: the next tick is Monday 09:00.
        assert_eq!(weekdays.next_tick(at(2026, 11, 28, 12, 0)), Some(at(2026, 11, 30, 9, 0)));
        assert_eq!(weekdays.next_tick(at(2026, 11, 30, 9, 0)), Some(at(2026, 11, 30, 9, 15)));
        let sunday = Cron::parse("30 6 * * 7").unwrap();
        assert_eq!(sunday.next_tick(at(2026, 11, 30, 0, 0)), Some(at(2026, 12, 6, 6, 30)));
        for bad in ["0 3 * *", "60 * * * *", "* 24 * * *", "5-1 * * * *", "*/0 * * * *", "a * * * *"] {
            assert!(Cron::parse(bad).is_err(), "{bad}");
        }
        assert!(Cron::parse("0 0 31 2 *").unwrap().next_tick(0).is_none(), "February 31st never comes");
    }
}
