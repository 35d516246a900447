//! Scatter plots as SVG text: axes with ticks, one colour per series, an optional horizontal
//! line (a bound), and points beyond the axis (infinite errors) drawn as triangles on its top
//! edge. Text is left to the browser's fonts, so nothing here measures glyphs.

use crate::html::esc;
use std::fmt::Write;

const W: f64 = 640.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 34.0;
const BOTTOM: f64 = 44.0;
const COLOURS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"];

/// One series of points.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend's label.
    pub name: String,
    /// (x, y); a non-finite y is drawn on the top edge as a triangle.
    pub points: Vec<(f64, f64)>,
}

/// A scatter plot.
#[derive(Clone, Debug, Default)]
pub struct Plot {
    /// The title above the plot.
    pub title: String,
    /// The x axis' label.
    pub x_label: String,
    /// The y axis' label.
    pub y_label: String,
    /// The series.
    pub series: Vec<Series>,
    /// A horizontal line at this y, with its label (a bound).
    pub line: Option<(f64, String)>,
}

/// Ticks over `[lo, hi]`: about five round values.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| span / s <= 6.0).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    (0..12).map(|k| (first + k) as f64 * step).take_while(|t| *t <= hi + step * 1e-9).collect()
}

fn label(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e5 || v.abs() < 1e-3 {
        format!("{v:.0e}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

impl Plot {
    /// The data's ranges: (x lo, x hi, y hi), y from 0, widened where empty or flat.
    fn ranges(&self) -> (f64, f64, f64) {
        let finite = self.series.iter().flat_map(|s| &s.points).filter(|p| p.0.is_finite());
        let (mut xlo, mut xhi, mut yhi) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
        for &(x, y) in finite {
            xlo = xlo.min(x);
            xhi = xhi.max(x);
            if y.is_finite() {
                yhi = yhi.max(y);
            }
        }
        if let Some((y, _)) = self.line {
            yhi = yhi.max(y * 1.2);
        }
        if !xlo.is_finite() {
            (xlo, xhi) = (0.0, 1.0);
        }
        if xhi <= xlo {
            xhi = xlo + 1.0;
        }
        if yhi <= 0.0 {
            yhi = 1.0;
        }
        (xlo, xhi, yhi * 1.05)
    }

    /// The plot as an `<svg>` element.
    pub fn to_svg(&self) -> String {
        let (xlo, xhi, yhi) = self.ranges();
        let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
        let sx = |x: f64| LEFT + (x - xlo) / (xhi - xlo) * pw;
        let sy = |y: f64| TOP + ph - (y / yhi).clamp(0.0, 1.0) * ph;
        let mut s = String::new();
        let _ = write!(
            s,
            r##"<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img"><title>{}</title><rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>"##,
            esc(&self.title)
        );
        let _ = write!(s, r#"<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{}</text>"#, esc(&self.title));
        for t in ticks(0.0, yhi) {
            let y = sy(t);
            let _ = write!(
                s,
                r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
                LEFT + pw,
                LEFT - 6.0,
                y + 4.0,
                label(t)
            );
        }
        for t in ticks(xlo, xhi) {
            let x = sx(t);
            let _ = write!(
                s,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{}" stroke="#999"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"##,
                TOP + ph,
                TOP + ph + 5.0,
                TOP + ph + 18.0,
                label(t)
            );
        }
        let _ = write!(
            s,
            r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/><text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text><text transform="translate(16 {}) rotate(-90)" font-size="12" text-anchor="middle">{}</text>"##,
            LEFT + pw / 2.0,
            H - 8.0,
            esc(&self.x_label),
            TOP + ph / 2.0,
            esc(&self.y_label)
        );
        if let Some((y, name)) = &self.line {
            let yy = sy(*y);
            let _ = write!(
                s,
                r##"<line x1="{LEFT}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" stroke="#000" stroke-dasharray="6 4"/><text x="{}" y="{:.1}" font-size="11">{}</text>"##,
                LEFT + pw,
                LEFT + pw + 6.0,
                yy + 4.0,
                esc(name)
            );
        }
        for (i, series) in self.series.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            for &(x, y) in series.points.iter().filter(|p| p.0.is_finite()) {
                let px = sx(x);
                if y.is_finite() {
                    let _ = write!(s, r#"<circle cx="{px:.1}" cy="{:.1}" r="3" fill="{c}" fill-opacity="0.75"/>"#, sy(y));
                } else {
                    let _ = write!(s, r#"<path d="M{:.1} {:.1} l4 7 h-8 z" fill="{c}"/>"#, px, TOP);
                }
            }
            let ly = TOP + 16.0 * i as f64 + 8.0;
            let _ = write!(
                s,
                r#"<circle cx="{}" cy="{ly:.1}" r="4" fill="{c}"/><text x="{}" y="{:.1}" font-size="11">{}</text>"#,
                LEFT + pw + 12.0,
                LEFT + pw + 20.0,
                ly + 4.0,
                esc(&series.name)
            );
        }
        s.push_str("</svg>");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let labels: Vec<String> = ticks(0.0, 1.0).into_iter().map(label).collect();
        assert_eq!(labels, ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        let t = ticks(3.0, 250.0);
        assert!(t.first().is_some_and(|v| *v >= 3.0) && t.last().is_some_and(|v| *v <= 250.0) && t.len() >= 3, "{t:?}");
    }

    #[test]
    fn every_point_is_drawn_and_text_is_escaped() {
        let plot = Plot {
            title: "a <b> & c".into(),
            x_label: "case".into(),
            y_label: "ulp".into(),
            series: vec![Series { name: "cpu".into(), points: vec![(0.0, 0.0), (1.0, 2.0), (2.0, f64::INFINITY)] }],
            line: Some((1.0, "bound".into())),
        };
        let svg = plot.to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 2 + 1, "two finite points and the legend's mark");
        assert_eq!(svg.matches("<path").count(), 1, "the infinite point on the top edge");
        assert!(svg.contains("a &lt;b&gt; &amp; c") && !svg.contains("<b>"));
    }
}
