//! The protections around the routes: cross-site request forgery, session fixation and expiry,
//! sign-in throttling, share-link revocation, path traversal, oversize bodies, headers, audit.

use crate::common;

use common::test_app::{Body, TestApp, PASSWORD};
use reqwest::Method;
use serde_json::json;
use server::auth::throttle::Limits;
use std::time::Duration;
use store::people::Role;

#[tokio::test]
async fn cross_site_posts_are_refused() {
    let app = TestApp::builder().start().await;
    let mut viewer = app.signed_in(Role::Viewer).await;
    let history = || Some(Body::Json(json!({"filter": {}})));
    assert_eq!(viewer.send(Method::POST, "/fn/history", history()).await.status, 200, "same origin works");

    viewer.origin = Some("http://evil.example".into());
    let r = viewer.send(Method::POST, "/fn/history", history()).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(r.text.contains("cross-site request refused"), "{}", r.text);

    viewer.origin = None;
    let r = viewer.send(Method::POST, "/fn/history", history()).await;
    assert_eq!(r.status, 403, "no Origin and no Referer is refused: {}", r.text);

    // The sign-in form itself (login CSRF) and sign-out are covered too.
    let mut stranger = app.anonymous();
    stranger.origin = Some("http://evil.example".into());
    let r = stranger.post_form("/login", &[("username", "x"), ("password", "y")]).await;
    assert_eq!(r.status, 403);
    viewer.origin = Some("http://evil.example".into());
    assert_eq!(viewer.post_form("/logout", &[]).await.status, 403);
    viewer.origin = Some(app.base.clone());
    assert_eq!(viewer.get("/api/v1/experiments").await.status, 200, "the forged sign-out did not end the session");

    // A script without cookies, Origin or token is no forgery: it is told to send a token.
    let mut script = app.anonymous();
    script.origin = None;
    let r = script.post_json("/api/v1/experiments", json!({"suite": "x", "head": "main"})).await;
    assert_eq!(r.status, 401, "{}", r.text);
    assert!(!r.text.contains("cross-site") && r.text.to_lowercase().contains("token"), "{}", r.text);
}

#[tokio::test]
async fn the_session_id_changes_at_sign_in_and_dies_at_sign_out() {
    let app = TestApp::builder().start().await;
    let (_, name) = app.user(Role::Viewer).await;
    let client = app.anonymous();
    // An anonymous visitor gets a session by opening a share link (the fixation vector).
    let experiment = app.experiment("x", None).await;
    let r = client.get(&format!("/share/{}", app.share(experiment).await)).await;
    assert_eq!(r.status, 303);
    let before = client.session_cookie().expect("a session before sign-in");
    let r = client.post_form("/login", &[("username", &name), ("password", PASSWORD)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let after = client.session_cookie().expect("a session after sign-in");
    assert_ne!(before, after, "the session id must change at sign-in");

    // The old id is worth nothing.
    let stale = app.anonymous();
    stale.jar.add_cookie_str(&format!("arbiter_session={before}"), &app.base.parse().unwrap());
    assert_eq!(stale.get("/api/v1/experiments").await.status, 401);
    assert_eq!(client.get("/api/v1/experiments").await.status, 200);

    assert_eq!(client.post_form("/logout", &[]).await.status, 303);
    let replay = app.anonymous();
    replay.jar.add_cookie_str(&format!("arbiter_session={after}"), &app.base.parse().unwrap());
    assert_eq!(replay.get("/api/v1/experiments").await.status, 401, "signed out means the id is dead");
}

/// Session ids are stored hashed: the database holds no cookie's id, and a row's stored id sent back as
/// a cookie signs nobody in (whoever reads the database cannot take over a session).
#[tokio::test]
async fn session_ids_are_stored_hashed() {
    let app = TestApp::builder().start().await;
    let (_, name) = app.user(Role::Viewer).await;
    let client = app.anonymous();
    let r = client.post_form("/login", &[("username", &name), ("password", PASSWORD)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let cookie = client.session_cookie().expect("a session after sign-in");
    let stored: Vec<String> =
        store::on_pool!(&app.store, pool => sqlx::query_scalar("SELECT id FROM tower_sessions").fetch_all(pool).await).unwrap();
    assert!(!stored.is_empty());
    assert!(!stored.contains(&cookie), "the cookie's id is stored as it is: {stored:?}");
    let id: tower_sessions::session::Id = cookie.parse().unwrap();
    assert!(stored.contains(&server::sessions::stored_id(&id).to_string()), "{stored:?}");
    for row in &stored {
        let thief = app.anonymous();
        thief.jar.add_cookie_str(&format!("arbiter_session={row}"), &app.base.parse().unwrap());
        assert_eq!(thief.get("/api/v1/experiments").await.status, 401, "a stored id is no key");
    }
    assert_eq!(client.get("/api/v1/experiments").await.status, 200);
}

#[tokio::test]
async fn session_cookie_flags_and_absolute_expiry() {
    let app = TestApp::builder().public_url("https://arbiter.example.com").start().await;
    let (_, name) = app.user(Role::Viewer).await;
    let mut client = app.anonymous();
    client.origin = Some("https://arbiter.example.com".into());
    let r = client.post_form("/login", &[("username", &name), ("password", PASSWORD)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    let cookie = r.headers.get("set-cookie").unwrap().to_str().unwrap().to_string();
    for flag in ["HttpOnly", "SameSite=Lax", "Secure", "Max-Age="] {
        assert!(cookie.contains(flag), "{flag} missing in {cookie}");
    }

    // Without a public URL, a proxy's `X-Forwarded-Proto: https` makes the cookie Secure too.
    let app = TestApp::builder().start().await;
    let (_, name) = app.user(Role::Viewer).await;
    let plain = app.anonymous().post_form("/login", &[("username", &name), ("password", PASSWORD)]).await;
    assert!(!plain.headers.get("set-cookie").unwrap().to_str().unwrap().contains("Secure"), "plain http: no Secure flag");
    let client = app.anonymous();
    let proxied = client
        .http
        .post(format!("{}/login", app.base))
        .header("origin", &app.base)
        .header("x-forwarded-proto", "https")
        .form(&[("username", name.as_str()), ("password", PASSWORD)])
        .send()
        .await
        .unwrap();
    assert!(proxied.headers().get("set-cookie").unwrap().to_str().unwrap().contains("; Secure"));

    let app = TestApp::builder().session_max(Duration::from_secs(3)).start().await;
    let (_, name) = app.user(Role::Viewer).await;
    let client = app.sign_in(&name).await;
    // Activity does not extend the absolute limit.
    for _ in 0..3 {
        assert_eq!(client.get("/api/v1/experiments").await.status, 200);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert_eq!(client.get("/api/v1/experiments").await.status, 401, "the session outlived its absolute limit");
}

#[tokio::test]
async fn disabled_users_and_revoked_tokens_lose_access_at_once() {
    let app = TestApp::builder().start().await;
    let (id, name) = app.user(Role::Launcher).await;
    let browser = app.sign_in(&name).await;
    let (token_client, token_id) = app.with_token(Role::Launcher).await;
    assert_eq!(browser.get("/api/v1/tokens").await.status, 200);
    assert_eq!(token_client.get("/api/v1/tokens").await.status, 200);

    let admin = app.signed_in(Role::Admin).await;
    let r = admin
        .send(Method::PATCH, &format!("/api/v1/users/{id}"), Some(Body::Json(json!({"disabled": true, "reason": "left the team"}))))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(browser.get("/api/v1/tokens").await.status, 401);

    let r = admin.send(Method::DELETE, &format!("/api/v1/tokens/{token_id}"), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = token_client.get("/api/v1/tokens").await;
    assert_eq!(r.status, 401);
    assert!(r.text.contains("revoked"), "{}", r.text);

    let audit = admin.get("/api/v1/audit").await.json();
    let actions: Vec<&str> = audit.as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"user.update") && actions.contains(&"token.revoke") && actions.contains(&"token.create"), "{actions:?}");
    let update = audit.as_array().unwrap().iter().find(|e| e["action"] == "user.update").unwrap();
    assert_eq!(update["reason"], "left the team");
    assert!(update["actor"].as_str().unwrap().starts_with("admin-"), "{update}");
}

#[tokio::test]
async fn the_last_admin_stays_an_admin() {
    let app = TestApp::builder().start().await;
    let (id, name) = app.user(Role::Admin).await;
    let admin = app.sign_in(&name).await;
    let r = admin.send(Method::PATCH, &format!("/api/v1/users/{id}"), Some(Body::Json(json!({"role": "viewer"})))).await;
    assert_eq!(r.status, 409, "{}", r.text);
    assert!(r.text.contains("last active admin"), "{}", r.text);
}

/// Two admins demoting each other at the same moment: one succeeds, the other is refused, and an admin
/// remains — on SQLite and on PostgreSQL (where both requests' checks run before either's change).
#[tokio::test]
async fn two_admins_demoting_each_other_at_once_leave_an_admin() {
    let db = store::testing::TestDb::postgres().await;
    for postgres in [false, true] {
        let app = match postgres {
            true => TestApp::builder().database_url(&db.url).start().await,
            false => TestApp::builder().start().await,
        };
        for round in 0..6 {
            let (a_id, a_name) = app.user(Role::Admin).await;
            let (b_id, b_name) = app.user(Role::Admin).await;
            // Only these two are active admins.
            for u in app.store.list_users().await.unwrap() {
                if u.role == Role::Admin && u.id != a_id && u.id != b_id {
                    app.store.update_user(u.id, None, Some(true)).await.unwrap();
                }
            }
            let (a, b) = (app.sign_in(&a_name).await, app.sign_in(&b_name).await);
            let demote = || Some(Body::Json(json!({"role": "viewer"})));
            let (path_a, path_b) = (format!("/api/v1/users/{b_id}"), format!("/api/v1/users/{a_id}"));
            let (ra, rb) = tokio::join!(a.send(Method::PATCH, &path_a, demote()), b.send(Method::PATCH, &path_b, demote()));
            let mut statuses = [ra.status, rb.status];
            statuses.sort();
            assert!(statuses == [200, 409] || statuses == [200, 403], "postgres {postgres} round {round}: {} / {}", ra.text, rb.text);
            assert_eq!(app.store.count_admins().await.unwrap(), 1, "postgres {postgres} round {round}: one admin remains");
        }
    }
}

#[tokio::test]
async fn a_share_link_opens_one_experiment_until_revoked() {
    let app = TestApp::builder().start().await;
    let (launcher_id, launcher_name) = app.user(Role::Launcher).await;
    let launcher = app.sign_in(&launcher_name).await;
    let mine = app.experiment("mine", Some(launcher_id)).await;
    let other = app.experiment("other", None).await;

    let r = launcher.send(Method::POST, &format!("/api/v1/experiments/{mine}/shares"), None).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let url = r.json()["url"].as_str().unwrap().to_string();
    let path = url.strip_prefix(&app.base).expect("the link points at this server").to_string();
    let r = launcher.send(Method::POST, &format!("/api/v1/experiments/{other}/shares"), None).await;
    assert_eq!(r.status, 403, "a launcher shares only their own experiments: {}", r.text);

    let reviewer = app.anonymous();
    let r = reviewer.get(&path).await;
    assert_eq!((r.status, r.location()), (303, Some(format!("/experiments/{mine}").as_str())));
    let page = reviewer.get(&format!("/experiments/{mine}")).await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("mine"), "the page shows the experiment");
    assert_eq!(reviewer.get(&format!("/api/v1/experiments/{mine}")).await.status, 200);
    assert_eq!(reviewer.get(&format!("/experiments/{other}")).await.status, 303, "another experiment is closed");
    assert_eq!(reviewer.get("/experiments").await.status, 303, "the history is closed");
    // Also as a query parameter (chart images and downloads embedded elsewhere).
    let secret = path.trim_start_matches("/share/");
    assert_eq!(app.anonymous().get(&format!("/api/v1/experiments/{mine}?share={secret}")).await.status, 200);

    let r = launcher.send(Method::DELETE, &format!("/api/v1/experiments/{mine}/shares"), None).await;
    assert_eq!((r.status, r.json()["revoked"].as_u64()), (200, Some(1)));
    assert_eq!(reviewer.get(&format!("/experiments/{mine}")).await.status, 303, "revoked: back to sign-in");
    assert_eq!(reviewer.get(&path).await.status, 404);
}

#[tokio::test]
async fn a_share_link_gives_the_page_and_its_reports_and_files_only_with_that_scope() {
    let app = TestApp::builder().start().await;
    let (launcher_id, launcher_name) = app.user(Role::Launcher).await;
    let launcher = app.sign_in(&launcher_name).await;
    let mine = app.experiment("mine", Some(launcher_id)).await;
    let dir = engine::experiment_dir(&app.state.data_dir, mine);
    for (file, text) in [("reports/gate.md", "gate"), ("logs/trial-0-1.log", "log"), ("logs/trial-0-1.server.env", "KEY=<redacted>")] {
        std::fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
        std::fs::write(dir.join(file), text).unwrap();
    }
    let (launcher, app) = (&launcher, &app);
    let open = |body: Option<serde_json::Value>| async move {
        let r = launcher.send(Method::POST, &format!("/api/v1/experiments/{mine}/shares"), body.map(Body::Json)).await;
        assert_eq!(r.status, 201, "{}", r.text);
        let visitor = app.anonymous();
        let path = r.json()["url"].as_str().unwrap().strip_prefix(&app.base).unwrap().to_string();
        assert_eq!(visitor.get(&path).await.status, 303);
        (r.json()["id"].as_i64().unwrap(), visitor)
    };
    // A plain link: the page and its reports; no logs, no server environment.
    let (plain_id, plain) = open(None).await;
    assert_eq!(plain.get(&format!("/experiments/{mine}/files/reports/gate.md")).await.status, 200);
    let r = plain.get(&format!("/experiments/{mine}/files/logs/trial-0-1.log")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert!(r.text.contains("logs and other files need a link made with files"), "{}", r.text);
    let page = plain.get(&format!("/experiments/{mine}")).await;
    assert!(page.text.contains("reports/gate.md") && !page.text.contains("trial-0-1.log"), "the page lists only what the link opens");
    // With the files scope: the logs too, but a phase's server environment stays with launchers.
    let (_, files) = open(Some(json!({"files": true, "expires_in_days": 7}))).await;
    assert_eq!(files.get(&format!("/experiments/{mine}/files/logs/trial-0-1.log")).await.status, 200);
    let r = files.get(&format!("/experiments/{mine}/files/logs/trial-0-1.server.env")).await;
    assert_eq!(r.status, 403, "{}", r.text);
    assert_eq!(launcher.get(&format!("/experiments/{mine}/files/logs/trial-0-1.server.env")).await.status, 200);
    let viewer = app.signed_in(Role::Viewer).await;
    assert_eq!(viewer.get(&format!("/experiments/{mine}/files/logs/trial-0-1.server.env")).await.status, 403);
    assert_eq!(viewer.get(&format!("/experiments/{mine}/files/logs/trial-0-1.log")).await.status, 200);
    // Bad requests are named and store nothing.
    for (body, needle) in [(json!({"expires_in_days": 0}), "expires_in_days 0: give 1–365 days"), (json!({"file": true}), "unknown field")]
    {
        let r = launcher.send(Method::POST, &format!("/api/v1/experiments/{mine}/shares"), Some(Body::Json(body))).await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(r.text.contains(needle), "{needle:?} in {}", r.text);
    }
    // The list says who made each link, its scope and expiry, never the secret.
    let r = launcher.get(&format!("/api/v1/experiments/{mine}/shares")).await;
    let links = r.json()["links"].as_array().unwrap().clone();
    assert_eq!(links.len(), 2, "{}", r.text);
    assert_eq!((links[0]["files"].as_bool(), links[0]["created_by"].as_str()), (Some(true), Some(launcher_name.as_str())));
    assert!(links[0]["expires_at"].as_i64().unwrap() > store::now_ms() + 6 * 86_400_000, "{}", r.text);
    assert!(!r.text.contains("token"), "{}", r.text);
    // Revoking one closes it and leaves the other open.
    let r = launcher.send(Method::DELETE, &format!("/api/v1/experiments/{mine}/shares/{plain_id}"), None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(plain.get(&format!("/experiments/{mine}")).await.status, 303, "the revoked link is closed");
    assert_eq!(files.get(&format!("/experiments/{mine}")).await.status, 200, "the other link still opens");
    assert_eq!(launcher.send(Method::DELETE, &format!("/api/v1/experiments/{mine}/shares/{plain_id}"), None).await.status, 404);
    // An expired link opens nothing.
    let secret = server::auth::token::generate();
    app.store.insert_share_token(mine, &server::auth::token::digest(&secret), None, true, Some(store::now_ms() - 1)).await.unwrap();
    let late = app.anonymous();
    let r = late.get(&format!("/share/{secret}")).await;
    assert_eq!(r.status, 404);
    assert!(r.text.contains("expired"), "{}", r.text);
}

/// Reads an event stream until `event: {name}` arrives (true) or `secs` pass (false).
async fn wait_for_event(response: &mut reqwest::Response, name: &str, secs: u64) -> bool {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    let mut text = String::new();
    while let Ok(Ok(Some(chunk))) = tokio::time::timeout_at(deadline, response.chunk()).await {
        text.push_str(&String::from_utf8_lossy(&chunk));
        if text.contains(&format!("event: {name}")) {
            return true;
        }
    }
    false
}

#[tokio::test]
async fn a_live_stream_ends_with_its_access_and_streams_are_capped_per_principal() {
    let app = TestApp::builder().start().await;
    let (launcher_id, launcher_name) = app.user(Role::Launcher).await;
    let launcher = app.sign_in(&launcher_name).await;
    let id = app.experiment("still running", Some(launcher_id)).await;
    let events = format!("{}/experiments/{id}/events", app.base);

    // A share link's holder follows the experiment; revoking the link ends the stream within seconds.
    let r = launcher.send(Method::POST, &format!("/api/v1/experiments/{id}/shares"), None).await;
    let path = r.json()["url"].as_str().unwrap().strip_prefix(&app.base).unwrap().to_string();
    let visitor = app.anonymous();
    assert_eq!(visitor.get(&path).await.status, 303);
    let mut stream = visitor.http.get(&events).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert!(wait_for_event(&mut stream, "progress", 5).await, "the stream runs");
    launcher.send(Method::DELETE, &format!("/api/v1/experiments/{id}/shares"), None).await;
    assert!(wait_for_event(&mut stream, "closed", 10).await, "a revoked link's stream is closed");

    // One user may hold 8 streams; the 9th is refused with 429 and says why; closing one frees a place.
    let mut open = Vec::new();
    for _ in 0..server::progress::STREAMS_PER_PRINCIPAL {
        let r = launcher.http.get(&events).send().await.unwrap();
        assert_eq!(r.status(), 200);
        open.push(r);
    }
    let refused = launcher.http.get(&events).send().await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.text().await.unwrap().contains("live progress streams open"));
    // Someone else is not held back by this user's streams.
    let viewer = app.signed_in(Role::Viewer).await;
    assert_eq!(viewer.http.get(&events).send().await.unwrap().status(), 200);
    open.pop();
    let mut freed = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let r = launcher.http.get(&events).send().await.unwrap();
        if r.status() == 200 {
            freed = true;
            break;
        }
    }
    assert!(freed, "a closed stream gives its place back");
}

/// Failures lock one client out of one account, and one client out of all accounts after more; a
/// stranger's wrong passwords only delay the real user elsewhere (growing, capped), never lock them out;
/// behind a trusted proxy the client is X-Forwarded-For's.
#[tokio::test]
async fn sign_in_is_throttled_per_account_and_client_and_a_stranger_cannot_lock_the_admin_out() {
    let limits = Limits {
        per_account_and_address: 3,
        per_address: 6,
        account_delay_after: 5,
        max_delay: Duration::from_secs(2),
        window: Duration::from_secs(600),
        hashing: 4,
    };
    let app = TestApp::builder().limits(limits).trusted_proxy("127.0.0.1").start().await;
    let (_, name) = app.user(Role::Admin).await;
    let as_client = |ip: &str| {
        let mut c = app.anonymous();
        c.forwarded_for = Some(ip.to_string());
        c
    };
    let stranger = as_client("203.0.113.9");
    for _ in 0..3 {
        let r = stranger.post_form("/login", &[("username", &name), ("password", "wrong wrong wrong")]).await;
        assert_eq!(r.status, 303);
        assert!(r.location().unwrap().contains("error=wrong"), "{:?}", r.location());
    }
    let r = stranger.post_form("/login", &[("username", &name), ("password", PASSWORD)]).await;
    assert_eq!(r.status, 429, "even the right password waits, from that client: {}", r.text);
    let wait: u64 = r.headers.get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
    assert!((1..=600).contains(&wait), "{wait}");
    assert!(r.text.contains("too many failed sign-ins"), "{}", r.text);
    // The admin, from their own address, signs in at once.
    let admin = as_client("198.51.100.20");
    let r = admin.post_form("/login", &[("username", &name), ("password", PASSWORD)]).await;
    assert_eq!(r.status, 303, "{}", r.text);
    assert!(!r.location().unwrap().contains("error="), "{:?}", r.location());

    // Many strangers together: past 5 failures on the account, each attempt waits a growing delay — which
    // the admin meets too, but for at most max_delay (2 s), then signs in.
    for i in 0..7 {
        let r =
            as_client(&format!("203.0.113.{}", 20 + i)).post_form("/login", &[("username", &name), ("password", "nope nope nope")]).await;
        if r.status == 429 {
            tokio::time::sleep(Duration::from_millis(2100)).await;
        }
    }
    let r = admin.post_form("/login", &[("username", &name), ("password", PASSWORD)]).await;
    let r = if r.status == 429 {
        let wait: u64 = r.headers.get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
        assert!(wait <= 2, "the delay is capped: {wait}");
        tokio::time::sleep(Duration::from_secs(wait)).await;
        admin.post_form("/login", &[("username", &name), ("password", PASSWORD)]).await
    } else {
        r
    };
    assert_eq!(r.status, 303, "never locked out: {}", r.text);

    // Per client address: other names from one client run out too.
    let sweeper = as_client("192.0.2.50");
    for n in 0..6 {
        let r = sweeper.post_form("/login", &[("username", &format!("ghost{n}")), ("password", "nope nope nope")]).await;
        assert_eq!(r.status, 303);
    }
    let (_, fresh) = app.user(Role::Viewer).await;
    let r = sweeper.post_form("/login", &[("username", &fresh), ("password", PASSWORD)]).await;
    assert_eq!(r.status, 429, "the client used up its failures: {}", r.text);
    // A forged header from an untrusted peer is no way around it: without the trusted proxy, the peer counts.
    let direct = TestApp::builder().limits(limits).start().await;
    let (_, someone) = direct.user(Role::Viewer).await;
    for n in 0..3 {
        let mut c = direct.anonymous();
        c.forwarded_for = Some(format!("192.0.2.{n}"));
        c.post_form("/login", &[("username", &someone), ("password", "nope nope nope")]).await;
    }
    let r = direct.anonymous().post_form("/login", &[("username", &someone), ("password", PASSWORD)]).await;
    assert_eq!(r.status, 429, "X-Forwarded-For is ignored from an untrusted peer: {}", r.text);
}

/// Sign-ins sent all at once are each counted before their password hash runs: ten parallel wrong
/// guesses on one account from one client leave it locked, with no more than the limit hashed.
#[tokio::test]
async fn parallel_sign_ins_cannot_pass_the_limit() {
    let limits = Limits {
        per_account_and_address: 3,
        per_address: 100,
        account_delay_after: 100,
        max_delay: Duration::from_secs(60),
        window: Duration::from_secs(600),
        hashing: 2,
    };
    let app = TestApp::builder().limits(limits).start().await;
    let (_, name) = app.user(Role::Viewer).await;
    let client = app.anonymous();
    let guesses = (0..10).map(|i| {
        let (client, name) = (&client, &name);
        async move { client.post_form("/login", &[("username", name), ("password", &format!("guess number {i}"))]).await.status }
    });
    let statuses = futures_util::future::join_all(guesses).await;
    let hashed = statuses.iter().filter(|s| **s == 303).count();
    assert!(hashed <= 3, "at most the limit reached a password check: {statuses:?}");
    assert!(statuses.iter().all(|s| [303, 429, 503].contains(s)), "{statuses:?}");
    let busy = statuses.iter().filter(|s| **s == 503).count();
    assert_eq!(hashed + busy + statuses.iter().filter(|s| **s == 429).count(), 10);
    let r = client.post_form("/login", &[("username", &name), ("password", PASSWORD)]).await;
    assert_eq!(r.status, if hashed == 3 { 429 } else { 303 }, "locked exactly when three guesses were checked: {statuses:?}");
}

#[tokio::test]
async fn downloads_stay_inside_the_experiment() {
    let app = TestApp::builder().start().await;
    let viewer = app.signed_in(Role::Viewer).await;
    let id = app.experiment("files", None).await;
    let dir = engine::experiment_dir(&app.state.data_dir, id);
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    std::fs::write(dir.join("logs/trial-1.log"), "stage ok\n").unwrap();
    std::fs::write(app.state.data_dir.join("secret.txt"), "top secret").unwrap();
    std::os::unix::fs::symlink(app.state.data_dir.join("secret.txt"), dir.join("escape.txt")).unwrap();
    std::os::unix::fs::symlink(app.state.data_dir.join("arbiter.db"), dir.join("db.log")).unwrap();

    let ok = viewer.get(&format!("/experiments/{id}/files/logs/trial-1.log")).await;
    assert_eq!((ok.status, ok.text.as_str()), (200, "stage ok\n"));
    assert!(ok.headers.get("content-security-policy").unwrap().to_str().unwrap().contains("sandbox"));

    for (path, expected) in [
        ("logs/../../../secret.txt", [400, 404]),
        ("..%2F..%2Fsecret.txt", [400, 404]),
        ("logs/%2e%2e/%2e%2e/%2e%2e/secret.txt", [400, 404]),
        ("%2Fetc%2Fpasswd", [400, 404]),
        (".hidden", [400, 400]),
        ("escape.txt", [404, 404]),
        ("db.log", [404, 404]),
        ("logs/missing.log", [404, 404]),
    ] {
        let r = viewer.get(&format!("/experiments/{id}/files/{path}")).await;
        assert!(expected.contains(&r.status), "{path}: got {} {}", r.status, r.text);
        assert!(!r.text.contains("top secret") && !r.text.contains("SQLite"), "{path} leaked a file");
    }
}

/// A branch's server writes into a folder a download may walk, and can swap a folder for a link to
/// the data dir while downloads run (the race a path check then open loses). Driven in a loop: the
/// swap never leads a download outside (the secret beside the database is never served), the
/// database is never opened, and a token revoked meanwhile stays revoked (the server's SQLite locks
/// were not dropped by a stray open of the database file).
#[tokio::test]
async fn a_folder_swapped_for_a_link_mid_download_never_leads_outside() {
    let app = TestApp::builder().start().await;
    let launcher = app.signed_in(Role::Launcher).await;
    let id = app.experiment("race", None).await;
    let dir = engine::experiment_dir(&app.state.data_dir, id).join("logs/d1");
    std::fs::create_dir_all(&dir).unwrap();
    let real = dir.join("x.real");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::write(real.join("secret.txt"), "public").unwrap();
    std::fs::write(real.join("arbiter.db"), "public").unwrap();
    std::fs::write(app.state.data_dir.join("secret.txt"), "SECRET beside the database").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (stop, dir, data) = (stop.clone(), dir.clone(), app.state.data_dir.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = std::os::unix::fs::symlink(&data, dir.join("x.link"));
                let _ = std::fs::rename(dir.join("x.link"), dir.join("x"));
                let _ = std::os::unix::fs::symlink(dir.join("x.real"), dir.join("x.tmp"));
                let _ = std::fs::remove_file(dir.join("x.tmp"));
                let _ = std::fs::remove_file(dir.join("x"));
                let _ = std::fs::rename(dir.join("x.real"), dir.join("x"));
                let _ = std::fs::rename(dir.join("x"), dir.join("x.real"));
                swaps += 1;
            }
            swaps
        })
    };
    let token = launcher.post_json("/api/v1/tokens", json!({"name": "to-revoke"})).await;
    assert_eq!(token.status, 201, "{}", token.text);
    let (token_id, secret) = (token.json()["id"].as_i64().unwrap(), token.json()["token"].as_str().unwrap().to_string());
    let mut by_status = std::collections::BTreeMap::new();
    for i in 0..600 {
        let path = if i % 2 == 0 { "logs/d1/x/secret.txt" } else { "logs/d1/x/arbiter.db" };
        let r = launcher.get(&format!("/experiments/{id}/files/{path}")).await;
        assert!(!r.text.contains("SECRET") && !r.text.contains("SQLite format"), "{path} led outside: {}", r.text);
        assert!(
            r.status == 404 || (r.status == 200 && r.text == "public" && path.ends_with("secret.txt")),
            "{path}: {} {}",
            r.status,
            r.text
        );
        *by_status.entry(r.status).or_insert(0) += 1;
        if i == 300 {
            assert_eq!(launcher.send(Method::DELETE, &format!("/api/v1/tokens/{token_id}"), None).await.status, 200);
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 100, "the swap ran ({swaps} times)");
    eprintln!("downloads during {swaps} swaps: {by_status:?}");
    let mut revoked = app.anonymous();
    revoked.bearer = Some(secret);
    assert_eq!(revoked.get("/api/v1/experiments").await.status, 401, "the revoked token stays revoked");
    if let store::Store::Sqlite(pool) = &app.store {
        let check: String = sqlx::query_scalar("PRAGMA integrity_check").fetch_one(pool).await.unwrap();
        assert_eq!(check, "ok");
    }
}

#[tokio::test]
async fn oversize_and_malformed_bodies_get_clear_4xx() {
    let app = TestApp::builder().start().await;
    let admin = app.signed_in(Role::Admin).await;
    let big = vec![b'x'; server::hardening::MAX_BODY_BYTES + 1];
    let r = admin.send(Method::POST, "/api/v1/users", Some(Body::Raw("application/json", big))).await;
    assert_eq!(r.status, 413, "{}", r.text);

    let r = admin.send(Method::POST, "/api/v1/users", Some(Body::Raw("application/json", b"{\"name\": ".to_vec()))).await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().to_lowercase().contains("json"), "{}", r.text);

    let r = admin.post_json("/api/v1/users", json!({"name": "x", "role": "emperor", "password": PASSWORD})).await;
    assert_eq!(r.status, 400);
    assert!(r.text.contains("emperor"), "the message names the bad value: {}", r.text);

    let r = admin.post_json("/api/v1/users", json!({"name": "bob", "role": "viewer", "password": "short"})).await;
    assert_eq!(r.status, 400);
    assert!(r.text.contains("at least 12"), "{}", r.text);
    assert!(app.store.user_by_name("bob").await.unwrap().is_none(), "nothing half-stored");

    let r = admin.get("/api/v1/experiments?limit=0").await;
    assert_eq!(r.status, 400);
    assert!(r.text.contains("limit"), "{}", r.text);
    let r = admin.get("/api/v1/experiments?colour=red").await;
    assert_eq!(r.status, 400, "unknown parameters are named, not ignored: {}", r.text);
    assert!(r.headers.get("x-request-id").is_some());
}

#[tokio::test]
async fn tokens_through_the_api_are_shown_once_and_listed_without_secrets() {
    let app = TestApp::builder().start().await;
    let launcher = app.signed_in(Role::Launcher).await;
    let r = launcher.post_json("/api/v1/tokens", json!({"name": "ci-nightly", "expires_in_days": 30})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let secret = r.json()["token"].as_str().unwrap().to_string();
    let r = launcher.post_json("/api/v1/tokens", json!({"name": "too-strong", "role": "admin"})).await;
    assert_eq!(r.status, 403, "{}", r.text);

    let mut ci = app.anonymous();
    ci.bearer = Some(secret.clone());
    assert_eq!(ci.get("/api/v1/experiments").await.status, 200);
    let listed = launcher.get("/api/v1/tokens").await;
    assert!(!listed.text.contains(&secret[4..]), "a listing never shows a secret");
    let tokens = listed.json();
    assert_eq!(tokens.as_array().unwrap().len(), 1);
    assert_eq!(tokens[0]["name"], "ci-nightly");
    assert!(tokens[0]["last_used_at"].as_i64().is_some(), "last use is recorded: {tokens}");
    assert!(tokens[0]["expires_at"].as_i64().is_some());

    let page = launcher.get("/account").await;
    assert_eq!(page.status, 200);
    assert!(page.text.contains("ci-nightly") && !page.text.contains(&secret[4..]), "the account page lists tokens, never secrets");
    let admin = app.signed_in(Role::Admin).await;
    let page = admin.get("/admin").await;
    assert!(page.text.contains("token.create") && page.text.contains("launcher-1"), "admins see the audit log and the users");
}

/// A token made with a token (a CI job minting a narrower one) cannot outlive it: its expiry is capped by
/// the parent's, and it stops working when the parent is revoked.
#[tokio::test]
async fn a_token_made_with_a_token_never_outlives_it() {
    let app = TestApp::builder().start().await;
    let launcher = app.signed_in(Role::Launcher).await;
    let r = launcher.post_json("/api/v1/tokens", json!({"name": "ci", "expires_in_days": 2})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let (parent_id, parent_expiry) = (r.json()["id"].as_i64().unwrap(), r.json()["expires_at"].as_i64().unwrap());
    let mut ci = app.anonymous();
    ci.bearer = Some(r.json()["token"].as_str().unwrap().to_string());
    ci.origin = None;

    let longer = ci.post_json("/api/v1/tokens", json!({"name": "child-30d", "expires_in_days": 30})).await;
    assert_eq!(longer.status, 201, "{}", longer.text);
    assert_eq!(longer.json()["expires_at"].as_i64(), Some(parent_expiry), "capped by the parent's expiry");
    let forever = ci.post_json("/api/v1/tokens", json!({"name": "child-forever"})).await;
    assert_eq!(forever.json()["expires_at"].as_i64(), Some(parent_expiry), "no expiry asked: the parent's");
    let shorter = ci.post_json("/api/v1/tokens", json!({"name": "child-1d", "expires_in_days": 1})).await;
    assert!(shorter.json()["expires_at"].as_i64().unwrap() < parent_expiry, "a shorter one keeps its own");
    // A browser session (no parent) may still make a long-lived token.
    let own = launcher.post_json("/api/v1/tokens", json!({"name": "mine", "expires_in_days": 30})).await;
    assert!(own.json()["expires_at"].as_i64().unwrap() > parent_expiry);

    let mut child = app.anonymous();
    child.bearer = Some(forever.json()["token"].as_str().unwrap().to_string());
    child.origin = None;
    let grandchild = child.post_json("/api/v1/tokens", json!({"name": "grandchild"})).await;
    assert_eq!(grandchild.status, 201, "{}", grandchild.text);
    let mut grand = app.anonymous();
    grand.bearer = Some(grandchild.json()["token"].as_str().unwrap().to_string());
    grand.origin = None;
    assert_eq!(child.get("/api/v1/experiments").await.status, 200);
    assert_eq!(grand.get("/api/v1/experiments").await.status, 200);

    assert_eq!(launcher.send(Method::DELETE, &format!("/api/v1/tokens/{parent_id}"), None).await.status, 200);
    for (who, client) in [("child", &child), ("grandchild", &grand)] {
        let r = client.get("/api/v1/experiments").await;
        assert_eq!(r.status, 401, "{who}: {}", r.text);
        assert!(r.text.contains("which was revoked or has expired"), "{who}: {}", r.text);
    }
    let mut own_client = app.anonymous();
    own_client.bearer = Some(own.json()["token"].as_str().unwrap().to_string());
    own_client.origin = None;
    assert_eq!(own_client.get("/api/v1/experiments").await.status, 200, "a token made in the browser is its own");
}

#[tokio::test]
async fn pages_carry_a_nonce_csp_and_api_errors_hide_internals() {
    let app = TestApp::builder().start().await;
    let viewer = app.signed_in(Role::Viewer).await;
    let page = viewer.get("/experiments").await;
    assert_eq!(page.status, 200);
    let csp = page.headers.get("content-security-policy").unwrap().to_str().unwrap().to_string();
    let nonce = csp.split("'nonce-").nth(1).and_then(|s| s.split('\'').next()).expect("a nonce in the CSP").to_string();
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("'wasm-unsafe-eval'"), "{csp}");
    assert!(page.text.contains(&format!("nonce=\"{nonce}\"")), "the page's scripts carry the nonce");
    let again = viewer.get("/experiments").await;
    assert!(!again.headers.get("content-security-policy").unwrap().to_str().unwrap().contains(&nonce), "a fresh nonce per response");
    assert_eq!(page.headers.get("x-content-type-options").unwrap(), "nosniff");
    let api = viewer.get("/api/v1/experiments/424242").await;
    assert_eq!(api.status, 404);
    assert_eq!(api.json()["error"], "no experiment 424242");
}

/// A bug that panics while a trial runs costs that trial (infra_failed with the message, re-queued once),
/// never the dispatcher: the next trial is claimed and run as usual.
#[tokio::test]
async fn a_panicking_trial_cannot_stop_the_scheduler() {
    use store::trials::InsertTrial;
    let app = TestApp::builder().start().await;
    let id = app.experiment("two trials", None).await;
    let arms = app.store.arms(id).await.unwrap();
    let plan: Vec<InsertTrial> = (0..2).map(|seq| InsertTrial { arm_id: arms[seq as usize].0, seq, cell: None, repeat_index: 0 }).collect();
    app.store.insert_trials(id, &plan).await.unwrap();
    let engine = &app.state.engine;
    let first = app.store.claim_next_trial(&engine.queue.worker).await.unwrap().unwrap();
    let out = engine::queue::run_guarded(engine, &first, async { panic!("index out of bounds in a phase") }).await;
    assert_eq!(out, None::<()>);
    let trials = app.store.trials(id).await.unwrap();
    let failed = trials.iter().find(|t| t.id == first.id).unwrap();
    assert_eq!(failed.state, judge::TrialState::InfraFailed, "{failed:?}");
    assert!(failed.detail.as_deref().unwrap_or("").contains("index out of bounds in a phase"), "{failed:?}");
    assert!(trials.iter().any(|t| t.seq == first.seq && t.attempt == 2), "re-queued once: {trials:?}");
    // The dispatcher's next claim works, and guarded work that does not panic returns its value.
    let next = app.store.claim_next_trial(&engine.queue.worker).await.unwrap().unwrap();
    assert_eq!(engine::queue::run_guarded(engine, &next, async { 7 }).await, Some(7));
}

/// Launchers read a suite with its secrets redacted — the webhook URL, `[cluster] env` values — and admins
/// see the real values they edit.
#[tokio::test]
async fn suite_secrets_are_shown_to_admins_only() {
    let app = TestApp::builder().start().await;
    let toml = "name = \"secretive\"\nkind = \"pipeline\"\nrepository = \"/nonexistent\"\nlauncher = \"cluster\"\n\
                command = [\"echo\", \"{run_tag}\"]\n[resources]\ncpu = 1\nram = \"1GiB\"\n\
                [cluster]\nprofile = \"slurm\"\nenv = { SLURM_AUTH_TOKEN = \"tok-3f9a1c77\" }\n\
                [notify]\nwebhook = \"https://hooks.example/services/T000/B000/hook-5e2d88\"\n\
                [notify.commit_status]\napi = \"https://api.github.com\"\nrepository = \"o/r\"\ntoken_env = \"ARBITER_NOTIFY_GH\"\n";
    let dir = app.dir.path().join("suites");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("s.toml"), toml).unwrap();
    engine::sync_suites(&app.store, &suite::load_dir(&dir).unwrap()).await.unwrap();
    let launcher = app.signed_in(Role::Launcher).await;
    let page = launcher.get("/suites/secretive").await;
    assert_eq!(page.status, 200, "{}", page.text);
    for secret in ["tok-3f9a1c77", "hook-5e2d88"] {
        assert!(!page.text.contains(secret), "a launcher never sees {secret}");
    }
    assert!(page.text.contains("SLURM_AUTH_TOKEN") && page.text.contains("&lt;redacted&gt;"), "the names stay, the values go");
    let admin = app.signed_in(Role::Admin).await;
    let page = admin.get("/suites/secretive").await;
    assert!(page.text.contains("tok-3f9a1c77") && page.text.contains("hook-5e2d88"), "admins see what they edit");
}

/// A method a route does not serve is a 405 naming what it takes (and not an error in the server's log).
#[tokio::test]
async fn an_unserved_method_is_a_405_with_allow() {
    let app = TestApp::builder().start().await;
    let viewer = app.signed_in(Role::Viewer).await;
    for method in ["PUT", "TRACE", "FROB"] {
        let r = viewer.send(Method::from_bytes(method.as_bytes()).unwrap(), "/api/v1/experiments", None).await;
        assert_eq!(r.status, 405, "{method}: {}", r.text);
        let allow = r.headers.get("allow").unwrap().to_str().unwrap().to_string();
        assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
        assert!(r.text.contains("not served here"), "{}", r.text);
    }
}
