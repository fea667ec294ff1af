//! A bisection as a PR comment (Markdown): the outcome, the culprit, and each step with its experiment's link.

use super::{short, Outcome, Reading, Search, StepRole};
use crate::pipeline::report::fmt_pct;

/// The culprit's facts a comment shows.
pub struct CulpritLine<'a> {
    pub sha: &'a str,
    pub subject: &'a str,
    pub author: &'a str,
    pub stat: &'a str,
}

/// A PR comment in Markdown: the outcome, the culprit, and every step with its experiment's link.
pub fn markdown(
    title: &str,
    url: &str,
    base_url: &str,
    metric: &str,
    search: &Search,
    outcome: Option<&Outcome>,
    culprit: Option<CulpritLine<'_>>,
) -> String {
    let head = match outcome {
        Some(Outcome::Culprit { .. }) => "🎯 culprit found",
        Some(Outcome::NoCulprit { .. }) => "✅ no culprit",
        Some(Outcome::Ambiguous { .. }) => "❔ ambiguous",
        None => "⏳ running",
    };
    let mut out = format!(
        "### Arbiter bisection — {head}\n\n[{}]({url}) · {metric} · {} commit{}\n\n",
        title.replace(['[', ']'], ""),
        search.commits.len(),
        if search.commits.len() == 1 { "" } else { "s" }
    );
    if let Some(o) = outcome {
        out.push_str(&format!("{}\n\n", o.words()));
    }
    if let Some(c) = culprit {
        out.push_str(&format!(
            "**Culprit:** `{}` {} — {} ({})\n\n",
            short(c.sha),
            c.subject.replace('|', "\\|"),
            c.author.replace(['<', '>'], ""),
            c.stat
        ));
    }
    out.push_str("| Step | Commit | Against | Change | Reading |\n| --- | --- | --- | --- | --- |\n");
    for s in &search.steps {
        let role = match s.role {
            StepRole::Ends => "ends",
            StepRole::Probe => "probe",
            StepRole::Confirm => "confirm",
        };
        let step = s.experiment_id.map_or(role.to_string(), |id| format!("[{role} #{id}]({base_url}/experiments/{id})"));
        let against = s.against.map_or("good end".to_string(), |i| format!("`{}`", short(&search.commits[i].sha)));
        let change = s.change_pct.map(fmt_pct).unwrap_or_else(|| "–".into());
        let reading = s.reading.map_or("running", |r| match r {
            Reading::Moved => "moved",
            Reading::Unmoved => "not moved",
            Reading::Unsure => "undecided",
            Reading::Opposite => "moved the other way",
            Reading::Broken => "not built (skipped)",
        });
        out.push_str(&format!("| {step} | `{}` | {against} | {change} | {reading} |\n", short(&search.commits[s.commit].sha)));
    }
    out
}
