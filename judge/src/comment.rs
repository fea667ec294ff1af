//! The pull-request comment: a heading with the verdict that links to the experiment, the report's own
//! Markdown (the pipeline stage table led by CPU change, or the warp gate table), and the charts as
//! images. The links carry a share token, so reviewers without an account see the page and the charts.

use crate::Verdict;
use std::fmt::Write;

/// A chart image for the comment: its caption and URL.
pub struct CommentChart {
    pub caption: String,
    pub url: String,
}

/// `shared`: `page_url` is a read-only share link (else the page itself, which asks for a sign-in).
pub fn pr_comment(id: i64, title: &str, verdict: Verdict, page_url: &str, report_markdown: &str, charts: &[CommentChart], shared: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### {} Arbiter: {} — [{title} (#{id})]({page_url})\n", verdict.tone().icon(), verdict.as_str());
    // The report's own heading repeats the verdict; the comment's heading replaces it.
    let body = report_markdown.trim_start();
    let body = if body.starts_with('#') { body.split_once('\n').map_or("", |(_, rest)| rest) } else { body };
    out.push_str(body.trim());
    out.push_str("\n\n");
    if !charts.is_empty() {
        let _ = writeln!(out, "<details><summary>Charts</summary>\n");
        for c in charts {
            let _ = writeln!(out, "![{}]({})\n", c.caption, c.url);
        }
        let _ = writeln!(out, "</details>\n");
    }
    if shared {
        let _ = writeln!(out, "[Open the experiment in Arbiter]({page_url}) (read-only link; anyone holding it can read this experiment)");
    } else {
        let _ = writeln!(out, "[Open the experiment in Arbiter]({page_url}) (sign in to read it)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_comment_leads_with_the_verdict_and_links_the_page_and_charts() {
        let md = "## ❌ Pipeline A/B: regression\n\n| Stage | CPU |\n|---|---|\n| map | +27.4 % |\n";
        let charts = [CommentChart {
            caption: "CPU per stage".into(),
            url: "https://a.example/experiments/7/charts/stage-cpu.svg?share=arb_x".into(),
        }];
        let c = pr_comment(7, "Heavier map", Verdict::Regression, "https://a.example/share/arb_x", md, &charts, true);
        assert!(c.starts_with("### ❌ Arbiter: regression — [Heavier map (#7)](https://a.example/share/arb_x)\n"), "{c}");
        assert!(!c.contains("Pipeline A/B: regression"), "the report's own heading is replaced");
        assert!(c.contains("| map | +27.4 % |"));
        assert!(c.contains("![CPU per stage](https://a.example/experiments/7/charts/stage-cpu.svg?share=arb_x)"));
    }
}
