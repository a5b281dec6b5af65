//! Figures like the paper's, as SVG (plotters' SVG backend needs no fonts
//! or system libraries):
//! - `<scenario>-<scheme>-paths.svg`: main-flow throughput per interface
//!   over time, 1 s bins (PET/BMP Figs. 4 and 6);
//! - `<scenario>-total.svg`: total throughput over time per scheme (Fig. 5);
//! - `<scenario>-schemes.svg`, with cross traffic: mean goodput of every
//!   scheme per cross-traffic scenario, scenarios sorted by MTCP (Figs. 7-9);
//! - `<scenario>-sweep.svg`, for a swept scenario: goodput of every scheme
//!   against the swept value, with the ideal sum where the scenario runs
//!   MTCP (PRISM Figs 6, 7 and 10-14, Phatak et al. Figs 4-6).

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::sweep::SweepOutput;

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

type PlotResult = Result<(), Box<dyn std::error::Error>>;

fn line_chart(
    file: &Path,
    title: &str,
    x_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> PlotResult {
    let root = SVGBackend::new(file, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let y_max = series
        .iter()
        .flat_map(|(_, s)| s.iter().map(|p| p.1))
        .fold(1.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc("throughput (kbit/s)")
        .draw()?;
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Writes the figure of a swept scenario into `dir`: goodput against x
/// per scheme, and the ideal sum where there is one. Returns the file.
pub fn write_sweep(
    r: &crate::ratio::RatioReport,
    dir: &Path,
) -> Result<PathBuf, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for row in &r.rows {
        match series.iter_mut().find(|(n, _)| *n == row.scheme) {
            Some((_, pts)) => pts.push((row.x, row.goodput_kbps)),
            None => series.push((row.scheme.clone(), vec![(row.x, row.goodput_kbps)])),
        }
    }
    let mut ideal: Vec<(f64, f64)> = r
        .rows
        .iter()
        .filter_map(|row| row.ideal_kbps.map(|k| (row.x, k)))
        .collect();
    ideal.dedup_by(|a, b| a.0 == b.0);
    if !ideal.is_empty() {
        series.push(("ideal".into(), ideal));
    }
    let f = dir.join(format!("{}-sweep.svg", r.scenario));
    line_chart(&f, &format!("{}: goodput", r.scenario), &r.param, &series)?;
    Ok(f)
}

/// Writes the figures for `out` into `dir`; returns the files written.
pub fn write_all(
    out: &SweepOutput,
    dir: &Path,
) -> Result<Vec<PathBuf>, Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let name = &out.report.scenario;
    let mut files = Vec::new();
    let mut totals = Vec::new();
    for (scheme, runs) in out.schemes.iter().zip(&out.runs) {
        let Some(run) = runs.first().and_then(|c| c.first()) else {
            continue;
        };
        let per_path: Vec<(String, Vec<(f64, f64)>)> = run
            .series_kbps
            .iter()
            .enumerate()
            .map(|(p, s)| {
                (
                    format!("ifa-{p}"),
                    s.iter().enumerate().map(|(t, v)| (t as f64, *v)).collect(),
                )
            })
            .collect();
        let f = dir.join(format!("{name}-{}-paths.svg", scheme.name()));
        line_chart(
            &f,
            &format!(
                "{name}: {} per interface (seed 1st, scenario 0)",
                scheme.name()
            ),
            "time (s)",
            &per_path,
        )?;
        files.push(f);
        let bins = run.series_kbps.first().map_or(0, |s| s.len());
        let total: Vec<(f64, f64)> = (0..bins)
            .map(|t| {
                (
                    t as f64,
                    run.series_kbps
                        .iter()
                        .map(|s| s.get(t).copied().unwrap_or(0.0))
                        .sum(),
                )
            })
            .collect();
        totals.push((scheme.name().to_string(), total));
    }
    let f = dir.join(format!("{name}-total.svg"));
    line_chart(
        &f,
        &format!("{name}: main-flow throughput"),
        "time (s)",
        &totals,
    )?;
    files.push(f);

    if out.report.cross_scenarios > 1 {
        // Sort scenarios by MTCP goodput, as the paper's Figs. 7-9 do.
        let order: Vec<usize> = match out.report.result("MTCP") {
            Some(m) => {
                let mut idx: Vec<usize> = (0..m.per_scenario_kbps.len()).collect();
                idx.sort_by(|&a, &b| m.per_scenario_kbps[a].total_cmp(&m.per_scenario_kbps[b]));
                idx
            }
            None => (0..out.report.cross_scenarios as usize).collect(),
        };
        let series: Vec<(String, Vec<(f64, f64)>)> = out
            .report
            .results
            .iter()
            .map(|r| {
                (
                    r.scheme.clone(),
                    order
                        .iter()
                        .enumerate()
                        .map(|(x, &c)| (x as f64 + 1.0, r.per_scenario_kbps[c]))
                        .collect(),
                )
            })
            .collect();
        let f = dir.join(format!("{name}-schemes.svg"));
        line_chart(
            &f,
            &format!("{name}: goodput per cross-traffic scenario (sorted by MTCP)"),
            "scenario",
            &series,
        )?;
        files.push(f);
    }
    Ok(files)
}
