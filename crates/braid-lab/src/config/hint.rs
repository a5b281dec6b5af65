//! Fix-it hints for the TOML parser's errors (a misspelled key gets its
//! nearest valid spelling).

/// Add a short fix-it hint to common serde/toml errors.
pub(super) fn parse_hint(msg: String) -> String {
    let msg = msg.trim_end().to_string();
    if msg.contains("unknown field") {
        match did_you_mean(&msg) {
            Some(s) => format!("{msg}\nhint: did you mean `{s}`?"),
            None => format!("{msg}\nhint: the key above is misspelled or not supported; use one of the keys listed as expected"),
        }
    } else if msg.contains("missing field") {
        format!("{msg}\nhint: add the missing key to the table shown above")
    } else if msg.contains("invalid type") {
        format!("{msg}\nhint: numbers with a fraction need a decimal point (10.0, not \"10\"); queue_bytes is an integer")
    } else {
        msg
    }
}

/// From "unknown field `x`, expected one of `a`, `b`" pick the expected key
/// closest to `x` (edit distance <= 3).
fn did_you_mean(msg: &str) -> Option<String> {
    let (_, rest) = msg.split_once("unknown field `")?;
    let (bad, rest) = rest.split_once('`')?;
    let (_, expected) = rest.split_once("expected")?;
    let first_line = expected.lines().next().unwrap_or("");
    first_line
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|k| (edit_distance(bad, k), k))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, k)| k.to_string())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + (ca != *cb) as usize).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}
