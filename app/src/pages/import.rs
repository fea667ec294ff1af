//! The import page: results measured elsewhere become a judged experiment. The form is an island that
//! posts the same JSON as `POST /api/v1/imports` (and `arbiter import`), then opens the new experiment.

use crate::client::{go, spawn_call, Method};
use wire::import::{JsonCompareCsv, JsonImport};
use leptos::prelude::*;
use leptos_meta::Title;

#[component]
pub fn ImportPage() -> impl IntoView {
    view! {
        <Title text="Import results" />
        <h1>"Import results measured elsewhere"</h1>
        <p class="muted">
            "Arbiter judges them exactly as " <code>"arbiter compare"</code> " and " <code>"arbiter gate"</code>
            " do and keeps them like a launched experiment: page, charts, history, share link. The page says that "
            "Arbiter did not run it. From a terminal or CI: " <code>"arbiter import"</code> " or " <code>"POST /api/v1/imports"</code> "."
        </p>
        <ImportForm />
    }
}

/// Non-empty trimmed lines.
fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// The request the form's fields describe: the API's own type (`wire::import::JsonImport`).
#[allow(clippy::too_many_arguments)]
pub fn import_request(
    kind: &str,
    title: &str,
    control_ref: &str,
    treatment_ref: &str,
    rows: &str,
    from_finelog: bool,
    control: &str,
    treatment: &str,
    worker_ram: &str,
    cells: &[(String, String)],
) -> JsonImport {
    let opt = |s: &str| (!s.trim().is_empty()).then(|| s.trim().to_string());
    let pipeline = kind != "warp";
    JsonImport {
        kind: if pipeline { judge::ExperimentKind::Pipeline } else { judge::ExperimentKind::Warp },
        title: title.trim().to_string(),
        suite: None,
        measured_at: None,
        control_ref: opt(control_ref),
        treatment_ref: opt(treatment_ref),
        control_sha: None,
        treatment_sha: None,
        rows: (pipeline && !from_finelog).then(|| rows.to_string()),
        finelog: pipeline && from_finelog,
        control: if pipeline { lines(control) } else { Vec::new() },
        treatment: if pipeline { lines(treatment) } else { Vec::new() },
        worker_ram: if pipeline { opt(worker_ram) } else { None },
        compare_csv: match pipeline {
            true => Vec::new(),
            false => cells
                .iter()
                .filter(|(label, text)| !label.trim().is_empty() || !text.trim().is_empty())
                .map(|(label, text)| JsonCompareCsv { label: label.trim().to_string(), text: text.clone() })
                .collect(),
        },
        rounds: Vec::new(),
        fail_pct: None,
        warn_pct: None,
    }
}

#[island]
fn ImportForm() -> impl IntoView {
    let kind = RwSignal::new("pipeline".to_string());
    let (title, control_ref, treatment_ref) = (RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new(String::new()));
    let (rows, control, treatment, worker_ram) =
        (RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new(String::new()));
    let from_finelog = RwSignal::new(false);
    let cells: Vec<(RwSignal<String>, RwSignal<String>)> =
        (0..4).map(|_| (RwSignal::new(String::new()), RwSignal::new(String::new()))).collect();
    let error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let cells_for_submit = cells.clone();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let pairs: Vec<(String, String)> = cells_for_submit.iter().map(|(l, t)| (l.get_untracked(), t.get_untracked())).collect();
        let body = import_request(
            &kind.get_untracked(),
            &title.get_untracked(),
            &control_ref.get_untracked(),
            &treatment_ref.get_untracked(),
            &rows.get_untracked(),
            from_finelog.get_untracked(),
            &control.get_untracked(),
            &treatment.get_untracked(),
            &worker_ram.get_untracked(),
            &pairs,
        );
        busy.set(true);
        error.set(None);
        let body = serde_json::to_value(&body).unwrap_or_default();
        spawn_call(Method::Post, "/api/v1/imports".into(), Some(body), move |result| {
            busy.set(false);
            let imported = result.and_then(|answer| {
                serde_json::from_value::<wire::answers::JsonImported>(answer).map_err(|_| "the import was refused".to_string())
            });
            match imported.map(|i| i.id) {
                Ok(id) => go(&format!("/experiments/{id}")),
                Err(e) => error.set(Some(e)),
            }
        });
    };
    let text = |label: &'static str, value: RwSignal<String>, placeholder: &'static str| {
        view! { <label>{label} <input type="text" placeholder=placeholder prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev)) /></label> }
    };
    let area = |label: &'static str, value: RwSignal<String>, placeholder: &'static str, rows_n: u32| {
        view! { <label>{label} <textarea rows=rows_n placeholder=placeholder prop:value=move || value.get() on:input=move |ev| value.set(event_target_value(&ev))></textarea></label> }
    };
    view! {
        <form class="import" on:submit=submit>
            <fieldset>
                <legend>"What"</legend>
                <label>"Kind"
                    <select on:change=move |ev| kind.set(event_target_value(&ev)) prop:value=move || kind.get()>
                        <option value="pipeline">"pipeline: zephyr.stage rows"</option>
                        <option value="warp">"warp: baseline_compare.csv"</option>
                    </select>
                </label>
                {text("Title", title, "Dedup: heavier MinHash")}
                {text("Control ref", control_ref, "main")}
                {text("Treatment ref", treatment_ref, "my-branch")}
            </fieldset>
            <Show when=move || kind.get() == "pipeline">
                <fieldset>
                    <legend>"Pipeline trials"</legend>
                    {area("Control trials (one per line: execution ids, comma-separated)", control, "20261129-072203-da99fe05", 3)}
                    {area("Treatment trials (one per line: [NAME=]ids)", treatment, "heavier=20261129-072244-a8070574", 3)}
                    {text("Worker RAM (optional)", worker_ram, "512MiB")}
                    <label class="check"><input type="checkbox" prop:checked=move || from_finelog.get() on:change=move |ev| from_finelog.set(event_target_checked(&ev)) />
                        " Read the rows from this server's finelog"</label>
                    <Show when=move || !from_finelog.get()>
                        {area("zephyr.stage rows (CSV with a header, a JSON array, or JSON lines)", rows, "execution_id,stage_name,status,…", 8)}
                    </Show>
                </fieldset>
            </Show>
            <Show when=move || kind.get() == "warp">
                <fieldset>
                    <legend>"Warp cells (up to four; empty ones are skipped)"</legend>
                    {cells.iter().enumerate().map(|(i, (label, csv))| view! {
                        <div class="cell">
                            {text(["Cell 1 label", "Cell 2 label", "Cell 3 label", "Cell 4 label"][i], *label, "put-4KiB/sync-on")}
                            {area(["Cell 1 baseline_compare.csv", "Cell 2 baseline_compare.csv", "Cell 3 baseline_compare.csv", "Cell 4 baseline_compare.csv"][i], *csv, "size,tool,concurrency,new_median_reqps,…", 4)}
                        </div>
                    }).collect_view()}
                </fieldset>
            </Show>
            {move || error.get().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <button type="submit" disabled=move || busy.get()>{move || if busy.get() { "Importing…" } else { "Import and judge" }}</button>
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::{import_request, JsonCompareCsv};

    #[test]
    fn the_form_builds_the_api_request() {
        let p = serde_json::to_value(import_request("pipeline", " T ", "main", "", "rows", false, "a,b\n\n c \n", "x=d\n", "", &[])).unwrap();
        assert_eq!(p["title"], "T");
        assert_eq!(p["control"], serde_json::json!(["a,b", "c"]));
        assert_eq!(p["treatment"], serde_json::json!(["x=d"]));
        assert!(p["treatment_ref"].is_null() && p["worker_ram"].is_null());
        assert_eq!(p["rows"], "rows");
        let f = serde_json::to_value(import_request("pipeline", "T", "", "", "ignored", true, "a", "b", "1GiB", &[])).unwrap();
        assert!(f["rows"].is_null() && f["finelog"] == true && f["worker_ram"] == "1GiB");
        let w = import_request("warp", "T", "", "", "", false, "", "", "", &[("c1".into(), "csv".into()), (String::new(), " ".into())]);
        assert_eq!(w.compare_csv, [JsonCompareCsv { label: "c1".into(), text: "csv".into() }]);
        assert!(w.control.is_empty() && w.rows.is_none());
    }
}
