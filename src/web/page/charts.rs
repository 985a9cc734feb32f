//! The history page's two pictures as server-rendered inline SVG (no script, no style
//! attribute, so the page's CSP allows them): wait time per day (p50, p90, p99 bars) and
//! the backlog over time (a step line). Every label is escaped.

use super::layout::{coarse, escape};
use crate::app::audit::{BacklogPoint, DayWait};

const W: f64 = 540.0;
const H: f64 = 220.0;
const LEFT: f64 = 64.0;
const BOTTOM: f64 = 36.0;
const TOP: f64 = 16.0;

fn frame(title: &str, inner: &str, y_labels: &[(f64, String)]) -> String {
    let mut s = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"img\" \
aria-label=\"{t}\" xmlns=\"http://www.w3.org/2000/svg\"><title>{t}</title>",
        t = escape(title)
    );
    let plot_h = H - TOP - BOTTOM;
    for (frac, label) in y_labels {
        let y = TOP + plot_h * (1.0 - frac);
        s.push_str(&format!(
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>\
<text class=\"axis\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            W - 8.0,
            LEFT - 6.0,
            y + 4.0,
            escape(label)
        ));
    }
    s.push_str(inner);
    s.push_str("</svg>");
    s
}

/// Wait per day: three bars (p50, p90, p99) per day.
pub fn waits(days: &[DayWait]) -> String {
    if days.is_empty() {
        return "<p class=\"empty\">No answered requests in this selection.</p>".into();
    }
    let max = days.iter().map(|d| d.p99_ms).max().unwrap_or(1).max(1) as f64;
    let plot_w = W - LEFT - 8.0;
    let plot_h = H - TOP - BOTTOM;
    let slot = plot_w / days.len() as f64;
    let bar = (slot / 4.0).min(24.0);
    let mut inner = String::new();
    let every = days.len().div_ceil(10).max(1);
    for (i, d) in days.iter().enumerate() {
        let x0 = LEFT + slot * i as f64 + (slot - bar * 3.0) / 2.0;
        for (k, (class, v)) in [("p50", d.p50_ms), ("p90", d.p90_ms), ("p99", d.p99_ms)]
            .into_iter()
            .enumerate()
        {
            let h = plot_h * v as f64 / max;
            inner.push_str(&format!(
                "<rect class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\">\
<title>{} {class}: {} ({} answered)</title></rect>",
                x0 + bar * k as f64,
                TOP + plot_h - h,
                bar,
                h.max(0.5),
                escape(&d.day),
                escape(&coarse(v)),
                d.count
            ));
        }
        if i % every == 0 {
            inner.push_str(&format!(
                "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                LEFT + slot * (i as f64 + 0.5),
                H - BOTTOM + 16.0,
                escape(&d.day[5..])
            ));
        }
    }
    inner.push_str(&format!(
        "<g class=\"legend\"><rect class=\"p50\" x=\"{LEFT}\" y=\"{0}\" width=\"10\" height=\"10\"/>\
<text class=\"axis\" x=\"{1}\" y=\"{2}\">p50</text><rect class=\"p90\" x=\"{3}\" y=\"{0}\" width=\"10\" height=\"10\"/>\
<text class=\"axis\" x=\"{4}\" y=\"{2}\">p90</text><rect class=\"p99\" x=\"{5}\" y=\"{0}\" width=\"10\" height=\"10\"/>\
<text class=\"axis\" x=\"{6}\" y=\"{2}\">p99</text></g>",
        H - 12.0,
        LEFT + 14.0,
        H - 3.0,
        LEFT + 50.0,
        LEFT + 64.0,
        LEFT + 100.0,
        LEFT + 114.0,
    ));
    let ys = [0.0, 0.5, 1.0]
        .iter()
        .map(|f| (*f, coarse((max * f) as i64)))
        .collect::<Vec<_>>();
    frame("Wait time per day (p50, p90, p99)", &inner, &ys)
}

/// The backlog over time: a step line of the open count.
pub fn backlog(points: &[BacklogPoint]) -> String {
    if points.len() < 2 {
        return "<p class=\"empty\">Not enough requests in this selection for a backlog.</p>"
            .into();
    }
    let t0 = points[0].at_ms as f64;
    let t1 = (points[points.len() - 1].at_ms as f64).max(t0 + 1.0);
    let max = points.iter().map(|p| p.open).max().unwrap_or(1).max(1) as f64;
    let plot_w = W - LEFT - 8.0;
    let plot_h = H - TOP - BOTTOM;
    let x = |t: i64| LEFT + plot_w * (t as f64 - t0) / (t1 - t0);
    let y = |n: i64| TOP + plot_h * (1.0 - n as f64 / max);
    let mut d = format!("M{:.1},{:.1}", x(points[0].at_ms), y(0));
    let mut prev = 0;
    for p in points {
        d.push_str(&format!(
            " L{:.1},{:.1} L{:.1},{:.1}",
            x(p.at_ms),
            y(prev),
            x(p.at_ms),
            y(p.open)
        ));
        prev = p.open;
    }
    let mut inner = format!("<path class=\"backlog\" d=\"{d}\"/>");
    for (frac, anchor) in [(0.0, "start"), (1.0, "end")] {
        let t = (t0 + (t1 - t0) * frac) as i64;
        inner.push_str(&format!(
            "<text class=\"axis\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"{anchor}\">{}</text>",
            x(t),
            H - BOTTOM + 16.0,
            escape(&if t1 - t0 < 3_600_000.0 {
                crate::clock::rfc3339(t)[..19].replace('T', " ")
            } else {
                crate::clock::rfc3339(t)[..16].replace('T', " ")
            })
        ));
    }
    let ys = [0.0, 0.5, 1.0]
        .iter()
        .map(|f| (*f, format!("{}", (max * f).round() as i64)))
        .collect::<Vec<_>>();
    frame("Backlog over time (requests open)", &inner, &ys)
}
