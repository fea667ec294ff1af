//! What plotters does not do: an accessible name, ink that follows the page's theme, and tooltips
//! (transparent shapes with a `<title>` laid over the marks, after the drawing).

use plotters::style::RGBColor;

/// Ink colour the charts draw with; replaced by `currentColor` in the finished SVG.
pub const INK: RGBColor = RGBColor(0, 0, 0);

/// Escapes text for SVG content and attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A hover area: a rectangle in pixels with its tooltip.
pub struct Tip {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
    pub text: String,
    /// Where a click on the area goes (a trend point opens its experiment).
    pub href: Option<String>,
}

/// Finishes a plotters SVG: `role="img"`, the chart's title as its accessible name, theme ink, tips.
pub fn finish(svg: String, title: &str, tips: &[Tip]) -> String {
    let ink = svg.replace("stroke=\"#000000\"", "stroke=\"currentColor\"").replace("fill=\"#000000\"", "fill=\"currentColor\"");
    let Some(open_end) = ink.find("<svg").and_then(|s| ink[s..].find('>').map(|e| s + e)) else { return ink };
    let mut out = String::with_capacity(ink.len() + tips.len() * 120 + 200);
    out.push_str(&ink[..open_end]);
    out.push_str(&format!(" class=\"chart\" role=\"img\" aria-label=\"{}\">", escape(title)));
    out.push_str(&format!("<title>{}</title>", escape(title)));
    let body_end = ink.rfind("</svg>").unwrap_or(ink.len());
    out.push_str(&ink[open_end + 1..body_end]);
    out.push_str("<g class=\"tips\" fill=\"transparent\">");
    for t in tips {
        let (x, y) = (t.x0.min(t.x1), t.y0.min(t.y1));
        let (w, h) = ((t.x1 - t.x0).abs().max(3), (t.y1 - t.y0).abs().max(3));
        let rect = format!("<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\"><title>{}</title></rect>", escape(&t.text));
        match &t.href {
            Some(href) => out.push_str(&format!("<a href=\"{}\">{rect}</a>", escape(href))),
            None => out.push_str(&rect),
        }
    }
    out.push_str("</g></svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finishing_adds_a_name_ink_and_tips() {
        let raw =
            r##"<svg width="10" height="10" viewBox="0 0 10 10" xmlns="http://www.w3.org/2000/svg"><text fill="#000000">a</text></svg>"##;
        let tip = Tip { x0: 5, y0: 5, x1: 1, y1: 2, text: "x < y & \"z\"".into(), href: None };
        let out = finish(raw.to_string(), "CPU <per> stage", &[tip]);
        assert!(out.starts_with(r#"<svg width="10" height="10" viewBox="0 0 10 10" xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="CPU &lt;per&gt; stage"><title>"#));
        assert!(out.contains(r#"<text fill="currentColor">a</text>"#));
        assert!(out.contains(r#"<rect x="1" y="2" width="4" height="3"><title>x &lt; y &amp; &quot;z&quot;</title></rect>"#));
        assert!(out.trim_end().ends_with("</g></svg>"));
    }
}
