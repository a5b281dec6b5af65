//! Parsing `braid analyze`'s command-line values: a path as
//! `RATE,DELAY[,SIZE]` (e.g. `10mbit,20ms,1500B`) and byte counts
//! (`10MB`, `64k`). Errors say which part is wrong and what would work.

use super::PathModel;

/// A value that cannot be used, with what to write instead.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum InputError {
    #[error("path {spec:?}: {msg}; write RATE,DELAY[,PACKET], e.g. 10mbit,20ms,1500B")]
    Path { spec: String, msg: String },
    #[error("{0}")]
    Paths(String),
    #[error("{what} {value:?}: {msg}")]
    Value {
        what: &'static str,
        value: String,
        msg: String,
    },
}

/// Splits a number from its unit suffix: `"10.5mbit"` → `(10.5, "mbit")`.
fn number_unit(s: &str) -> Option<(f64, String)> {
    let s = s.trim();
    let end = s
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')
        })
        .unwrap_or(s.len());
    // "1e3" is a number, but the e of "ms" must not be eaten: retry shorter.
    let (mut num, mut unit) = s.split_at(end);
    while !num.is_empty() && num.parse::<f64>().is_err() {
        let cut = num.len() - 1;
        (num, unit) = s.split_at(cut);
    }
    let v: f64 = num.parse().ok()?;
    Some((v, unit.trim().to_ascii_lowercase()))
}

/// A rate: `10mbit`, `10Mbit/s`, `10mbps`, `500kbit`, `1gbit`, `64000bit`
/// (decimal multiples, bits per second). Returns bit/s.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    let (v, unit) = number_unit(s).ok_or_else(|| format!("rate {s:?} has no number"))?;
    let unit = unit.trim_end_matches("/s").trim_end_matches("ps");
    let mult = match unit {
        "bit" | "b" => 1.0,
        "kbit" | "k" | "kb" => 1e3,
        "mbit" | "m" | "mb" => 1e6,
        "gbit" | "g" | "gb" => 1e9,
        "" => return Err(format!("rate {s:?} needs a unit: kbit, mbit or gbit")),
        u => {
            return Err(format!(
                "rate {s:?} has unknown unit {u:?}; use kbit, mbit or gbit"
            ))
        }
    };
    let bps = v * mult;
    if !(bps.is_finite() && bps >= 1.0) {
        return Err(format!("rate {s:?} must be at least 1 bit/s"));
    }
    Ok(bps)
}

/// A one-way delay: `20ms`, `1.5s`, `300us`; 0 is allowed. Returns seconds.
pub fn parse_delay(s: &str) -> Result<f64, String> {
    let (v, unit) = number_unit(s).ok_or_else(|| format!("delay {s:?} has no number"))?;
    let mult = match unit.as_str() {
        "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "" if v == 0.0 => 1.0,
        "" => return Err(format!("delay {s:?} needs a unit: ms, s or us")),
        u => {
            return Err(format!(
                "delay {s:?} has unknown unit {u:?}; use ms, s or us"
            ))
        }
    };
    let d = v * mult;
    if !(d.is_finite() && (0.0..=3600.0).contains(&d)) {
        return Err(format!("delay {s:?} must be between 0 and 1 hour"));
    }
    Ok(d)
}

/// A byte count: `1500`, `1500B`, `64k`, `10MB`, `1GB` (decimal
/// multiples). Returns bytes.
pub fn parse_bytes(s: &str) -> Result<f64, InputError> {
    let err = |msg: &str| InputError::Value {
        what: "byte count",
        value: s.to_string(),
        msg: msg.to_string(),
    };
    let (v, unit) = number_unit(s).ok_or_else(|| err("has no number; write e.g. 1500B or 10MB"))?;
    let mult = match unit.trim_end_matches('b') {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        _ => return Err(err("has an unknown unit; use B, kB, MB or GB")),
    };
    let b = v * mult;
    if !(b.is_finite() && b >= 1.0) {
        return Err(err("must be at least 1 byte"));
    }
    Ok(b)
}

/// Packet sizes the analysis accepts, bytes: a minimal IPv4 packet to a
/// jumbo frame.
const PACKET_RANGE: std::ops::RangeInclusive<f64> = 20.0..=65_535.0;

/// One `--path` value: `RATE,DELAY[,PACKET]`, the packet size defaulting
/// to 1500 bytes.
pub fn parse_path(spec: &str, name: String) -> Result<PathModel, InputError> {
    let bad = |msg: String| InputError::Path {
        spec: spec.to_string(),
        msg,
    };
    let parts: Vec<&str> = spec.split(',').map(str::trim).collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(bad(format!(
            "has {} comma-separated parts, needs 2 or 3",
            parts.len()
        )));
    }
    let rate_bps = parse_rate(parts[0]).map_err(bad)?;
    let delay_s = parse_delay(parts[1]).map_err(bad)?;
    let packet_bytes = match parts.get(2) {
        None => 1500.0,
        Some(p) => parse_bytes(p).map_err(|e| bad(e.to_string()))?,
    };
    if !PACKET_RANGE.contains(&packet_bytes) {
        return Err(bad(format!(
            "packet size {packet_bytes} B is outside 20..65535 bytes"
        )));
    }
    Ok(PathModel {
        name,
        rate_bps,
        delay_s,
        packet_bytes,
    })
}

/// Checks paths built from a file: a usable count and sane values.
pub fn validate(paths: &[PathModel]) -> Result<(), InputError> {
    let bad = InputError::Paths;
    if paths.is_empty() {
        return Err(bad(
            "need at least one path; give --path RATE,DELAY[,PACKET] or a lab/scenario file".into(),
        ));
    }
    if paths.len() > braid_core::path::MAX_PATHS {
        return Err(bad(format!(
            "at most {} paths",
            braid_core::path::MAX_PATHS
        )));
    }
    for p in paths {
        let ok = p.rate_bps.is_finite()
            && p.rate_bps >= 1.0
            && p.delay_s.is_finite()
            && p.delay_s >= 0.0
            && PACKET_RANGE.contains(&p.packet_bytes);
        if !ok {
            return Err(bad(format!(
                "path {} has rate {} bit/s, delay {} s, packet {} B; rates must be >= 1 bit/s, delays >= 0, packets 20..65535 B",
                p.name, p.rate_bps, p.delay_s, p.packet_bytes
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths() {
        let p = parse_path("10mbit,20ms", "a".into()).unwrap();
        assert_eq!(
            (p.rate_bps, p.delay_s, p.packet_bytes),
            (10e6, 0.02, 1500.0)
        );
        let p = parse_path("2.5Mbit/s, 1s, 576B", "b".into()).unwrap();
        assert_eq!((p.rate_bps, p.delay_s, p.packet_bytes), (2.5e6, 1.0, 576.0));
        let p = parse_path("40kbps,0,300", "c".into()).unwrap();
        assert_eq!((p.rate_bps, p.delay_s, p.packet_bytes), (40e3, 0.0, 300.0));
        assert_eq!(parse_rate("1gbit"), Ok(1e9));
        assert_eq!(parse_delay("300us"), Ok(300e-6));
        assert_eq!(parse_bytes("10MB"), Ok(10e6));
        assert_eq!(parse_bytes("64k"), Ok(64e3));
    }

    #[test]
    fn errors_say_what_to_write() {
        let e = parse_path("10mbit", "a".into()).unwrap_err().to_string();
        assert!(e.contains("RATE,DELAY") && e.contains("1 comma"), "{e}");
        let e = parse_path("10,20ms", "a".into()).unwrap_err().to_string();
        assert!(e.contains("needs a unit") && e.contains("mbit"), "{e}");
        let e = parse_path("10mbit,20parsecs", "a".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown unit") && e.contains("ms"), "{e}");
        let e = parse_path("0mbit,20ms", "a".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 1 bit/s"), "{e}");
        let e = parse_path("10mbit,20ms,9", "a".into())
            .unwrap_err()
            .to_string();
        assert!(e.contains("20..65535"), "{e}");
        let e = parse_bytes("lots").unwrap_err().to_string();
        assert!(e.contains("10MB"), "{e}");
        assert!(validate(&[]).unwrap_err().to_string().contains("--path"));
    }
}
