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

#[cfg(test)]
mod tests {
    use super::parse_size;

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
}
