//! The rows a sweep scenario prints, `{"scheme", "x", ...}` (the format
//! the PRISM, MPLOT and R-MTP reproductions share), with the look-ups and
//! JSON forms common to every kind of row. Each kind keeps its own table.

use serde::Serialize;

/// One row of a sweep: a scheme at one value of the swept parameter.
pub trait SweepRow: Serialize {
    fn scheme(&self) -> &str;
    fn x(&self) -> f64;
}

/// A sweep's rows, in scenario order.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Rows<R> {
    pub name: String,
    pub rows: Vec<R>,
}

impl<R: SweepRow> Rows<R> {
    /// The row of `scheme` at `x`, if the sweep ran it.
    pub fn row(&self, scheme: &str, x: f64) -> Option<&R> {
        self.rows
            .iter()
            .find(|r| r.scheme() == scheme && (r.x() - x).abs() < 1e-9)
    }

    /// The report as one JSON object, `{"name", "rows": [...]}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("report serialises")
    }

    /// One JSON object per line.
    pub fn to_json_lines(&self) -> String {
        self.rows
            .iter()
            .map(|r| serde_json::to_string(r).expect("rows serialize"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
