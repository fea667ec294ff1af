//! The authorization matrix: every route in `auth::policy::RULES` × every kind of caller → the status
//! it must get. A route missing from this table, or a table line for a route that does not exist,
//! fails the test: adding a route means deciding here who may call it.

use crate::common;

use common::test_app::{Body, Client, TestApp};
use reqwest::Method;
use serde_json::json;
use server::auth::policy::RULES;
use store::people::Role;

/// The callers, in the order of each expectation row.
const CALLERS: [&str; 10] = [
    "anonymous",
    "viewer",
    "launcher",
    "admin",
    "share(own)",
    "share(other)",
    "token(launcher)",
    "token(revoked)",
    "token(expired)",
    "metrics",
];

struct Case {
    method: Method,
    /// The route as `RULES` spells it.
    route: &'static str,
    /// The request path: `{A}` is the experiment the share link opens, `{C}` one the launcher owns.
    path: &'static str,
    body: Option<fn() -> Body>,
    expect: [u16; 10],
}

const fn case(method: Method, route: &'static str, path: &'static str, body: Option<fn() -> Body>, expect: [u16; 10]) -> Case {
    Case { method, route, path, body, expect }
}

fn bad_login() -> Body {
    Body::Form(vec![("username".into(), "nobody".into()), ("password".into(), "wrong password here".into())])
}
fn bad_setup() -> Body {
    Body::Form(["token", "username", "password", "again"].iter().map(|k| (k.to_string(), "x".to_string())).collect())
}
fn history() -> Body {
    Body::Json(json!({"filter": {}}))
}
fn experiment_a() -> Body {
    Body::Form(vec![("id".into(), "{A}".into())])
}
fn empty_import() -> Body {
    Body::Json(json!({"kind": "warp", "title": ""}))
}
fn empty_json() -> Body {
    Body::Json(json!({}))
}
fn invalid_token() -> Body {
    Body::Json(json!({"name": ""}))
}
fn no_such_suite() -> Body {
    Body::Json(json!({"suite": "no-such-suite", "head": "main", "dry_run": true}))
}
fn no_suite() -> Body {
    Body::Form(vec![("name".into(), "no-such-suite".into())])
}
fn bad_suite() -> Body {
    Body::Json(json!({"toml": "name = "}))
}
fn bad_mark() -> Body {
    Body::Json(
        json!({"suite": "x", "metric": "cpu-s", "item": "x", "fingerprint": "{}", "experiment_id": 1, "state": "bogus", "reason": "r"}),
    )
}
fn no_bisection() -> Body {
    Body::Json(json!({"id": 999999}))
}
fn bad_bisection() -> Body {
    Body::Json(json!({"suite": "no-such-suite", "good": "main", "bad": "topic", "metric": "cpu:x"}))
}
fn demote() -> Body {
    Body::Json(json!({"role": "viewer"}))
}

//                 anon  view  laun  admn  shOwn shOth tokL  revk  expd  metr
const PUBLIC: [u16; 10] = [200, 200, 200, 200, 200, 200, 200, 401, 401, 200];
const READER_PAGE: [u16; 10] = [303, 200, 200, 200, 303, 303, 200, 401, 401, 303];
const EXPERIMENT_PAGE: [u16; 10] = [303, 200, 200, 200, 200, 303, 200, 401, 401, 303];
const READER_API: [u16; 10] = [401, 200, 200, 200, 401, 401, 200, 401, 401, 401];
const ADMIN_API: [u16; 10] = [401, 403, 403, 200, 401, 401, 403, 401, 401, 401];

fn cases() -> Vec<Case> {
    use Method as M;
    vec![
        case(M::GET, "/healthz", "/healthz", None, PUBLIC),
        case(M::GET, "/readyz", "/readyz", None, PUBLIC),
        case(M::GET, "/metrics", "/metrics", None, [401, 403, 403, 200, 401, 401, 403, 401, 401, 200]),
        case(M::GET, "/login", "/login", None, PUBLIC),
        case(M::POST, "/login", "/login", Some(bad_login), [303, 303, 303, 303, 303, 303, 303, 401, 401, 303]),
        case(M::GET, "/setup", "/setup", None, PUBLIC),
        // A bad or used setup link: back to the setup page, which says the link was used.
        case(M::POST, "/setup", "/setup", Some(bad_setup), [303, 303, 303, 303, 303, 303, 303, 401, 401, 303]),
        case(M::GET, "/share/{token}", "/share/arb_not-a-real-token", None, [404, 404, 404, 404, 404, 404, 404, 401, 401, 404]),
        case(M::GET, "/", "/", None, READER_PAGE),
        case(M::GET, "/experiments", "/experiments", None, READER_PAGE),
        case(M::GET, "/experiments/{id}", "/experiments/{A}", None, EXPERIMENT_PAGE),
        // A report goes with the page; logs need the files scope (security.rs checks those).
        case(M::GET, "/experiments/{id}/files/{*path}", "/experiments/{A}/files/reports/report.txt", None, EXPERIMENT_PAGE),
        case(M::GET, "/experiments/{id}/charts/{name}", "/experiments/{A}/charts/stage-cpu.svg", None, EXPERIMENT_PAGE),
        case(M::GET, "/experiments/{id}/export/{name}", "/experiments/{A}/export/report.md", None, EXPERIMENT_PAGE),
        case(M::GET, "/experiments/{id}/events", "/experiments/{A}/events", None, EXPERIMENT_PAGE),
        case(M::GET, "/suites", "/suites", None, [303, 403, 200, 200, 303, 303, 200, 401, 401, 303]),
        case(M::GET, "/suites/{name}", "/suites/no-such-suite", None, [303, 403, 404, 404, 303, 303, 404, 401, 401, 303]),
        case(M::GET, "/launch", "/launch", None, [303, 403, 200, 200, 303, 303, 200, 401, 401, 303]),
        case(M::GET, "/import", "/import", None, [303, 403, 200, 200, 303, 303, 200, 401, 401, 303]),
        case(M::GET, "/trends", "/trends", None, READER_PAGE),
        case(M::GET, "/bisections", "/bisections", None, READER_PAGE),
        // No bisection 999999: past the gate, a signed-in reader gets the page's 404.
        case(M::GET, "/bisections/{id}", "/bisections/999999", None, [303, 404, 404, 404, 303, 303, 404, 401, 401, 303]),
        case(M::GET, "/account", "/account", None, READER_PAGE),
        case(M::GET, "/admin", "/admin", None, [303, 403, 403, 200, 303, 303, 403, 401, 401, 303]),
        case(M::POST, "/fn/whoami", "/fn/whoami", None, PUBLIC),
        case(M::POST, "/fn/history", "/fn/history", Some(history), READER_API),
        case(M::POST, "/fn/experiment", "/fn/experiment", Some(experiment_a), [401, 200, 200, 200, 200, 404, 200, 401, 401, 401]),
        case(M::POST, "/fn/account", "/fn/account", None, READER_API),
        case(M::POST, "/fn/trends", "/fn/trends", Some(history), READER_API),
        case(M::POST, "/fn/bisections", "/fn/bisections", None, READER_API),
        // A share-link holder gets past the gate (a bisection's link reads it); 999999 is no one's.
        case(M::POST, "/fn/bisection", "/fn/bisection", Some(no_bisection), [401, 404, 404, 404, 404, 404, 404, 401, 401, 401]),
        case(M::POST, "/fn/launch_suites", "/fn/launch_suites", None, [401, 403, 200, 200, 401, 401, 200, 401, 401, 401]),
        case(M::POST, "/fn/suites", "/fn/suites", None, [401, 403, 200, 200, 401, 401, 200, 401, 401, 401]),
        case(M::POST, "/fn/suite", "/fn/suite", Some(no_suite), [401, 403, 404, 404, 401, 401, 404, 401, 401, 401]),
        case(M::POST, "/fn/admin", "/fn/admin", None, ADMIN_API),
        // Past the gate, a bad state is named (400); the suite editor's TOML is checked like a file (400).
        case(M::POST, "/api/v1/change-points", "/api/v1/change-points", Some(bad_mark), [401, 403, 400, 400, 401, 401, 400, 401, 401, 401]),
        case(M::POST, "/api/v1/suites", "/api/v1/suites", Some(bad_suite), [401, 403, 403, 400, 401, 401, 403, 401, 401, 401]),
        case(
            M::PUT,
            "/api/v1/suites/{name}",
            "/api/v1/suites/no-such-suite",
            Some(bad_suite),
            [401, 403, 403, 400, 401, 401, 403, 401, 401, 401],
        ),
        case(
            M::DELETE,
            "/api/v1/suites/{name}/noise-profiles/{id}",
            "/api/v1/suites/no-such-suite/noise-profiles/1",
            None,
            [401, 403, 403, 404, 401, 401, 403, 401, 401, 401],
        ),
        case(M::GET, "/api/v1/openapi.json", "/api/v1/openapi.json", None, [200, 200, 200, 200, 200, 200, 200, 401, 401, 200]),
        case(M::GET, "/api/v1/experiments", "/api/v1/experiments", None, READER_API),
        // Past the gate, an unknown suite is a 400.
        case(
            M::POST,
            "/api/v1/experiments",
            "/api/v1/experiments",
            Some(no_such_suite),
            [401, 403, 400, 400, 401, 401, 400, 401, 401, 401],
        ),
        case(M::GET, "/api/v1/experiments/{id}", "/api/v1/experiments/{A}", None, [401, 200, 200, 200, 200, 401, 200, 401, 401, 401]),
        // C is not running: past the gate, cancelling it is a conflict.
        case(
            M::POST,
            "/api/v1/experiments/{id}/cancel",
            "/api/v1/experiments/{C}/cancel",
            None,
            [401, 403, 200, 409, 401, 401, 409, 401, 401, 401],
        ),
        // C was not launched from a suite: past the gate, a re-run is a conflict.
        case(
            M::POST,
            "/api/v1/experiments/{id}/rerun",
            "/api/v1/experiments/{C}/rerun",
            None,
            [401, 403, 409, 409, 401, 401, 409, 401, 401, 401],
        ),
        // C has no verdict: past the gate, re-judging it is a conflict.
        case(
            M::POST,
            "/api/v1/experiments/{id}/rejudge",
            "/api/v1/experiments/{C}/rejudge",
            None,
            [401, 403, 409, 409, 401, 401, 409, 401, 401, 401],
        ),
        // C has no verdict: past the gate, any reader's comment is a conflict (a share holder is no principal).
        case(
            M::POST,
            "/api/v1/experiments/{id}/comment",
            "/api/v1/experiments/{C}/comment",
            None,
            [401, 409, 409, 409, 401, 401, 409, 401, 401, 401],
        ),
        // The launcher owns C; the viewer may not share, the admin may share anything.
        case(
            M::POST,
            "/api/v1/experiments/{id}/shares",
            "/api/v1/experiments/{C}/shares",
            None,
            [401, 403, 201, 201, 401, 401, 201, 401, 401, 401],
        ),
        case(
            M::GET,
            "/api/v1/experiments/{id}/shares",
            "/api/v1/experiments/{C}/shares",
            None,
            [401, 403, 200, 200, 401, 401, 200, 401, 401, 401],
        ),
        // Past the gate, a link C does not have is a 404.
        case(
            M::DELETE,
            "/api/v1/experiments/{id}/shares/{share}",
            "/api/v1/experiments/{C}/shares/999999",
            None,
            [401, 403, 404, 404, 401, 401, 404, 401, 401, 401],
        ),
        case(
            M::DELETE,
            "/api/v1/experiments/{id}/shares",
            "/api/v1/experiments/{C}/shares",
            None,
            [401, 403, 200, 200, 401, 401, 200, 401, 401, 401],
        ),
        case(M::GET, "/api/v1/bisections", "/api/v1/bisections", None, READER_API),
        // Past the gate, an unknown suite is a 400; no bisection 999999 is a 404.
        case(M::POST, "/api/v1/bisections", "/api/v1/bisections", Some(bad_bisection), [401, 403, 400, 400, 401, 401, 400, 401, 401, 401]),
        case(M::GET, "/api/v1/bisections/{id}", "/api/v1/bisections/999999", None, [401, 404, 404, 404, 401, 401, 404, 401, 401, 401]),
        case(
            M::POST,
            "/api/v1/bisections/{id}/cancel",
            "/api/v1/bisections/999999/cancel",
            None,
            [401, 403, 404, 404, 401, 401, 404, 401, 401, 401],
        ),
        case(
            M::POST,
            "/api/v1/bisections/{id}/shares",
            "/api/v1/bisections/999999/shares",
            None,
            [401, 403, 404, 404, 401, 401, 404, 401, 401, 401],
        ),
        case(
            M::DELETE,
            "/api/v1/bisections/{id}/shares",
            "/api/v1/bisections/999999/shares",
            None,
            [401, 403, 404, 404, 401, 401, 404, 401, 401, 401],
        ),
        // Past the gate, an empty title is a 400.
        case(M::POST, "/api/v1/imports", "/api/v1/imports", Some(empty_import), [401, 403, 400, 400, 401, 401, 400, 401, 401, 401]),
        case(M::GET, "/api/v1/tokens", "/api/v1/tokens", None, [401, 403, 200, 200, 401, 401, 200, 401, 401, 401]),
        // Past the gate, an empty name is a 400: authorization passed, validation refused.
        case(M::POST, "/api/v1/tokens", "/api/v1/tokens", Some(invalid_token), [401, 403, 400, 400, 401, 401, 400, 401, 401, 401]),
        case(M::DELETE, "/api/v1/tokens/{id}", "/api/v1/tokens/999999", None, [401, 403, 404, 404, 401, 401, 404, 401, 401, 401]),
        case(M::GET, "/api/v1/users", "/api/v1/users", None, ADMIN_API),
        case(M::POST, "/api/v1/users", "/api/v1/users", Some(empty_json), [401, 403, 403, 400, 401, 401, 403, 401, 401, 401]),
        case(M::PATCH, "/api/v1/users/{id}", "/api/v1/users/999999", Some(demote), [401, 403, 403, 404, 401, 401, 403, 401, 401, 401]),
        case(M::GET, "/api/v1/audit", "/api/v1/audit", None, ADMIN_API),
        // Last: it ends the sessions it is sent with.
        case(M::POST, "/logout", "/logout", None, [303, 303, 303, 303, 303, 303, 303, 401, 401, 303]),
    ]
}

#[test]
fn every_route_has_a_row_and_every_row_a_route() {
    let cases = cases();
    for rule in RULES {
        assert!(
            cases.iter().any(|c| c.method == rule.method && c.route == rule.path),
            "{} {} is in auth::policy::RULES but not in the authorization matrix: add a row with who may call it",
            rule.method,
            rule.path
        );
    }
    for c in &cases {
        assert!(RULES.iter().any(|r| r.method == c.method && r.path == c.route), "matrix row {} {} has no rule", c.method, c.route);
    }
}

/// Every page of the app and every server function has a rule (else it is closed to everyone).
#[tokio::test]
async fn every_page_and_server_function_has_a_rule() {
    use server::auth::policy::access_for;
    for route in leptos_axum::generate_route_list(app::App) {
        let path = route.path();
        assert!(access_for(&Method::GET, path).is_some(), "page {path} has no rule in auth::policy::RULES");
    }
    for (path, method) in leptos::server_fn::axum::server_fn_paths() {
        assert!(access_for(&method, path).is_some(), "server function {method} {path} has no rule in auth::policy::RULES");
    }
}

#[tokio::test]
async fn the_matrix() {
    let app = TestApp::builder().metrics_token("metrics-secret-for-the-matrix-test").start().await;
    let (launcher_id, launcher_name) = app.user(Role::Launcher).await;
    let a = app.judged_pipeline("shared one").await;
    let b = app.experiment("another", None).await;
    let c = app.experiment("the launcher's", Some(launcher_id)).await;
    let files = engine::experiment_dir(&app.state.data_dir, a);
    std::fs::create_dir_all(files.join("reports")).unwrap();
    std::fs::write(files.join("reports/report.txt"), "report").unwrap();

    let mut callers: Vec<Client> = Vec::new();
    callers.push(app.anonymous());
    callers.push(app.signed_in(Role::Viewer).await);
    callers.push(app.sign_in(&launcher_name).await);
    callers.push(app.signed_in(Role::Admin).await);
    for experiment in [a, b] {
        let client = app.anonymous();
        let r = client.get(&format!("/share/{}", app.share(experiment).await)).await;
        assert_eq!((r.status, r.location()), (303, Some(format!("/experiments/{experiment}").as_str())));
        callers.push(client);
    }
    let mut token = app.anonymous();
    token.origin = None;
    let launcher = app.store.user_by_id(launcher_id).await.unwrap().unwrap();
    for (expires_in, revoke) in [(None, false), (None, true), (Some(1), false)] {
        let (id, secret) =
            server::auth::users::issue_api_token(&app.store, None, &launcher, "t", Role::Launcher, expires_in, None).await.unwrap();
        if revoke {
            app.store.revoke_api_token(id).await.unwrap();
        }
        if expires_in.is_some() {
            app.store.set_api_token_expiry(id, Some(store::now_ms() - 1)).await.unwrap();
        }
        let mut c = app.anonymous();
        c.bearer = Some(secret);
        c.origin = None;
        callers.push(c);
    }
    let metrics_secret = "metrics-secret-for-the-matrix-test";
    assert_eq!(app.state.auth.metrics_token_digest.as_deref(), Some(server::auth::token::digest(metrics_secret).as_str()));
    let mut metrics = app.anonymous();
    metrics.bearer = Some(metrics_secret.to_string());
    metrics.origin = None;
    callers.push(metrics);

    let mut failures = Vec::new();
    for case in cases() {
        let path = case.path.replace("{A}", &a.to_string()).replace("{C}", &c.to_string());
        for (who, (caller, expected)) in CALLERS.iter().zip(callers.iter().zip(case.expect)) {
            let body = case.body.map(|b| match b() {
                Body::Form(pairs) => Body::Form(
                    pairs.into_iter().map(|(k, v)| (k, v.replace("{A}", &a.to_string()).replace("{C}", &c.to_string()))).collect(),
                ),
                other => other,
            });
            let r = caller.send(case.method.clone(), &path, body).await;
            if r.status != expected {
                failures.push(format!(
                    "{} {path} as {who}: expected {expected}, got {} ({})",
                    case.method,
                    r.status,
                    r.text.chars().take(160).collect::<String>()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{} authorization mismatches:\n{}", failures.len(), failures.join("\n"));
}
