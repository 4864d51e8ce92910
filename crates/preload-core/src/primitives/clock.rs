//! Wall-clock formatting without a time-zone database (UTC only).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How far `at` is from `now`, either way. After the clock is set back, a file written before
/// looks as if it came from the future: it is as old as it is far, so a lock, a cache or a
/// leftover dated ahead ages like one dated behind instead of staying new until the clock
/// catches up.
pub fn distance(at: SystemTime, now: SystemTime) -> Duration {
    now.duration_since(at)
        .unwrap_or_else(|ahead| ahead.duration())
}

/// [`distance`] from now: the age of a file's time stamp, clock jumps either way included.
pub fn age(at: SystemTime) -> Duration {
    distance(at, SystemTime::now())
}

/// Seconds since the Unix epoch.
pub fn unix_seconds(at: SystemTime) -> i64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// (year, month, day, hour, minute, second) in UTC.
pub fn utc_parts(at: SystemTime) -> (i64, u32, u32, u32, u32, u32) {
    let secs = unix_seconds(at);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let to_u32 = |v: i64| u32::try_from(v).unwrap_or(0);
    (
        year,
        to_u32(month),
        to_u32(day),
        to_u32(rem / 3_600),
        to_u32(rem % 3_600 / 60),
        to_u32(rem % 60),
    )
}

/// `YYYY-MM-DDTHH:MM:SSZ`.
pub fn iso_utc(at: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = utc_parts(at);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `YYYY-MM-DD HH:MM:SS` (UTC), the session context line's time.
pub fn human_utc(at: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = utc_parts(at);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_format() {
        assert_eq!(iso_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_771_252_200);
        assert_eq!(iso_utc(t), "2026-02-16T14:30:00Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(human_utc(leap), "2000-02-29 00:00:00");
    }

    #[test]
    fn a_time_ahead_is_as_old_as_it_is_far() {
        let now = SystemTime::now();
        let minute = Duration::from_secs(60);
        assert_eq!(distance(now - minute, now), minute);
        assert_eq!(distance(now + minute, now), minute);
        assert_eq!(distance(now, now), Duration::ZERO);
    }
}
