//! Range checks of a lab file's values ([`LabConfig::validate`]): every
//! error names the offending key and says how to fix it.

use super::*;

impl LabConfig {
    pub(super) fn validate_with_origin(&self, origin: &str) -> Result<(), ConfigError> {
        let bad = |key: String, message: String| ConfigError::Invalid {
            origin: origin.to_string(),
            key,
            message,
        };
        if self.name.trim().is_empty() {
            return Err(bad(
                "name".into(),
                "must not be empty; add e.g. name = \"two-equal\"".into(),
            ));
        }
        if self.paths.is_empty() {
            return Err(bad(
                "path".into(),
                "no paths defined; add at least one [[path]] table with name and rate_mbit".into(),
            ));
        }
        if self.paths.len() > MAX_PATHS {
            return Err(bad(
                "path".into(),
                format!("{} paths defined, at most {MAX_PATHS} are supported; remove some [[path]] tables", self.paths.len()),
            ));
        }
        for (i, p) in self.paths.iter().enumerate() {
            let k = |field: &str| format!("path[{i}].{field}");
            if p.name.trim().is_empty() {
                return Err(bad(
                    k("name"),
                    "must not be empty; add e.g. name = \"a\"".into(),
                ));
            }
            if let Some(j) = self.paths[..i].iter().position(|q| q.name == p.name) {
                return Err(bad(
                    k("name"),
                    format!(
                        "\"{}\" is already used by path[{j}]; path names must be unique",
                        p.name
                    ),
                ));
            }
            for (field, v) in [
                ("rate_mbit", p.rate_mbit),
                ("up_rate_mbit", p.up_rate_mbit),
                ("down_rate_mbit", p.down_rate_mbit),
            ] {
                if let Some(v) = v {
                    check_rate(v).map_err(|m| bad(k(field), m))?;
                }
            }
            for dir in Direction::BOTH {
                let (field, v) = match dir {
                    Direction::Up => ("up_rate_mbit", p.up_rate_mbit),
                    Direction::Down => ("down_rate_mbit", p.down_rate_mbit),
                };
                if v.or(p.rate_mbit).is_none() {
                    return Err(bad(
                        k("rate_mbit"),
                        format!("missing: the {dir} direction has no rate; set rate_mbit = 10.0 (both directions) or {field}"),
                    ));
                }
            }
            for (field, v) in [
                ("delay_ms", p.delay_ms),
                ("up_delay_ms", p.up_delay_ms),
                ("down_delay_ms", p.down_delay_ms),
            ] {
                if let Some(v) = v {
                    check_delay(v).map_err(|m| bad(k(field), m))?;
                }
            }
            for (field, v) in [
                ("queue_bytes", p.queue_bytes),
                ("up_queue_bytes", p.up_queue_bytes),
                ("down_queue_bytes", p.down_queue_bytes),
            ] {
                if let Some(v) = v {
                    if v < MTU_BYTES {
                        return Err(bad(
                            k(field),
                            format!("{v} is smaller than one full-size packet ({MTU_BYTES} bytes), nothing could pass; use at least {MTU_BYTES} or omit it for one bandwidth-delay product"),
                        ));
                    }
                }
            }
            if let Some(th) = p.ecn_mark_bytes {
                for dir in Direction::BOTH {
                    let q = self.resolve(i, dir).queue_bytes;
                    if th >= q {
                        return Err(bad(
                            k("ecn_mark_bytes"),
                            format!("{th} is not below the {dir} queue limit ({q} bytes), so the queue would drop before it marks; use less, e.g. half of queue_bytes ({})", q / 2),
                        ));
                    }
                }
            }
            for (field, v) in [
                ("loss", p.loss),
                ("up_loss", p.up_loss),
                ("down_loss", p.down_loss),
            ] {
                if let Some(v) = v {
                    check_prob(v, true).map_err(|m| bad(k(field), m))?;
                }
            }
            if let Some(g) = &p.gilbert {
                if p.loss.or(p.up_loss).or(p.down_loss).is_some() {
                    return Err(bad(
                        k("gilbert"),
                        "cannot be combined with loss/up_loss/down_loss; keep only one loss model"
                            .into(),
                    ));
                }
                for (field, v, allow_one) in [
                    ("p_good_bad", g.p_good_bad, true),
                    ("p_bad_good", g.p_bad_good, true),
                    ("loss_bad", g.loss_bad, true),
                    ("loss_good", g.loss_good, false),
                ] {
                    check_prob(v, allow_one).map_err(|m| bad(k(&format!("gilbert.{field}")), m))?;
                }
                if g.p_bad_good == 0.0 && g.p_good_bad > 0.0 {
                    return Err(bad(k("gilbert.p_bad_good"), "is 0, so the path would stay in the bad state forever; use a value > 0 (e.g. 0.3)".into()));
                }
            }
            if let Some(r) = &p.rlc {
                if !(r.block_error >= 0.0 && r.block_error < 1.0) {
                    return Err(bad(
                        k("rlc.block_error"),
                        format!(
                            "{} must be a probability in [0, 1) (e.g. 0.1)",
                            r.block_error
                        ),
                    ));
                }
                if !(r.retx_ms.is_finite() && (0.0..=1000.0).contains(&r.retx_ms)) {
                    return Err(bad(
                        k("rlc.retx_ms"),
                        format!(
                            "{} must be a delay in ms between 0 and 1000 (e.g. 8)",
                            r.retx_ms
                        ),
                    ));
                }
                if !(1..=16).contains(&r.max_attempts) {
                    return Err(bad(
                        k("rlc.max_attempts"),
                        format!("{} must be between 1 and 16 (e.g. 4)", r.max_attempts),
                    ));
                }
            }
            let mut prev = -1.0f64;
            for (t, e) in p.trace.iter().enumerate() {
                let tk = |field: &str| k(&format!("trace[{t}].{field}"));
                if !(e.at_s.is_finite() && e.at_s >= 0.0) {
                    return Err(bad(
                        tk("at_s"),
                        format!("{} must be a time in seconds >= 0", e.at_s),
                    ));
                }
                if e.at_s <= prev {
                    return Err(bad(tk("at_s"), format!("{} is not after the previous entry ({prev}); trace entries must be sorted by strictly increasing at_s", e.at_s)));
                }
                prev = e.at_s;
                for (field, v) in [
                    ("rate_mbit", e.rate_mbit),
                    ("up_rate_mbit", e.up_rate_mbit),
                    ("down_rate_mbit", e.down_rate_mbit),
                ] {
                    if let Some(v) = v {
                        check_rate(v).map_err(|m| bad(tk(field), m))?;
                    }
                }
                for (field, v) in [
                    ("delay_ms", e.delay_ms),
                    ("up_delay_ms", e.up_delay_ms),
                    ("down_delay_ms", e.down_delay_ms),
                ] {
                    if let Some(v) = v {
                        check_delay(v).map_err(|m| bad(tk(field), m))?;
                    }
                }
                if let Some(v) = e.loss {
                    check_prob(v, true).map_err(|m| bad(tk("loss"), m))?;
                    if p.gilbert.is_some() {
                        return Err(bad(
                            tk("loss"),
                            "cannot change loss on a path that uses gilbert; remove one of them"
                                .into(),
                        ));
                    }
                }
                let any = e
                    .rate_mbit
                    .or(e.up_rate_mbit)
                    .or(e.down_rate_mbit)
                    .or(e.delay_ms)
                    .or(e.up_delay_ms)
                    .or(e.down_delay_ms)
                    .or(e.loss);
                if any.is_none() {
                    return Err(bad(k(&format!("trace[{t}]")), "changes nothing; set at least one of rate_mbit, delay_ms, loss (or up_/down_ variants)".into()));
                }
            }
        }
        Ok(())
    }
}

fn check_rate(v: f64) -> Result<(), String> {
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("{v} must be a rate in Mbit/s > 0, e.g. 10.0"));
    }
    if v > MAX_RATE_MBIT {
        return Err(format!("{v} Mbit/s is above the {MAX_RATE_MBIT} Mbit/s the userspace emulator can shape accurately; use a lower rate"));
    }
    Ok(())
}

fn check_delay(v: f64) -> Result<(), String> {
    if !(v.is_finite() && (0.0..=10_000.0).contains(&v)) {
        return Err(format!(
            "{v} must be a one-way delay in milliseconds between 0 and 10000, e.g. 20.0"
        ));
    }
    Ok(())
}

fn check_prob(v: f64, allow_one: bool) -> Result<(), String> {
    let ok = v.is_finite() && v >= 0.0 && if allow_one { v <= 1.0 } else { v < 1.0 };
    if !ok {
        let range = if allow_one { "0.0..=1.0" } else { "0.0..1.0" };
        return Err(format!(
            "{v} must be a probability in {range} (e.g. 0.01 for 1 %), not a percentage"
        ));
    }
    Ok(())
}
