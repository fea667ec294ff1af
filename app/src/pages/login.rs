//! Sign-in and first-run setup. Both are plain HTML forms posted to the server (they work before the
//! page hydrates and without JavaScript); the server answers with a redirect, carrying any error back
//! in the query string.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

/// Only a path of this site is followed after sign-in, else `/experiments`. A space is encoded back
/// (`%20`): the router's query map hands the login page `next` decoded twice, so a search such as
/// `/experiments?q=smaller%20write%20buffer` arrives with spaces.
pub fn safe_next(next: Option<String>) -> String {
    next.map(|n| n.replace(' ', "%20")).filter(|n| is_site_path(n)).unwrap_or_else(|| "/experiments".to_string())
}

/// A path of this site: one `/` first, printable ASCII only (a browser drops tabs and newlines, so
/// `/<tab>/evil.example` would become `//evil.example`), no backslash anywhere; and percent-decoded, still
/// one `/` first with no backslash or control character (`/%2F%2Fevil.example`, `/%5Cevil`, `/%09/x`).
pub fn is_site_path(n: &str) -> bool {
    let one_slash = |s: &str| s.starts_with('/') && !s[1..].starts_with('/') && !s.contains('\\');
    one_slash(n)
        && n.len() <= 2048
        && n.bytes().all(|c| c.is_ascii_graphic())
        && percent_decoded(n).is_some_and(|d| one_slash(&d) && !d.chars().any(char::is_control))
}

/// `%XX` decoded (`None` for a broken escape or bytes that are not UTF-8).
fn percent_decoded(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_leads_only_to_a_path_of_this_site() {
        for ok in ["/experiments/3", "/suites/a-b?tab=runs", "/", "/share/abc%20def"] {
            assert_eq!(safe_next(Some(ok.into())), ok, "{ok}");
        }
        for bad in [
            "//evil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "/\\evil.example",
            "/x\\y",
            "https://evil.example",
            "evil.example",
            "/%2F/evil.example",
            "/%2f%2fevil.example",
            "/%5Cevil.example",
            "/%09/evil.example",
            "/%E0%A4%A",
            "/ä",
            "",
        ] {
            assert_eq!(safe_next(Some(bad.into())), "/experiments", "{bad:?}");
        }
        assert_eq!(safe_next(None), "/experiments");
        assert_eq!(safe_next(Some("/experiments?q=smaller write buffer".into())), "/experiments?q=smaller%20write%20buffer");
        assert_eq!(safe_next(Some("/ /evil.example".into())), "/%20/evil.example", "still a path of this site");
    }
}

#[component]
pub fn LoginPage() -> impl IntoView {
    let query = use_query_map();
    let error = move || query.read().get("error");
    let next = move || safe_next(query.read().get("next"));
    view! {
        <Title text="Sign in" />
        <section class="auth">
            <h1>"Sign in"</h1>
            {move || error().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <form method="post" action="/login" class="stack">
                <input type="hidden" name="next" value=next />
                <label>"User name" <input name="username" autocomplete="username" required autofocus /></label>
                <label>"Password" <input name="password" type="password" autocomplete="current-password" required /></label>
                <button type="submit">"Sign in"</button>
            </form>
            <p class="muted">"No account? An admin creates one with " <code>"arbiter user add NAME --role viewer"</code> "."</p>
        </section>
    }
}

#[component]
pub fn SetupPage() -> impl IntoView {
    let query = use_query_map();
    let error = move || query.read().get("error");
    let token = move || query.read().get("token").unwrap_or_default();
    // A link that was used (or belongs to a server that restarted since) says so instead of a form that
    // cannot work.
    #[cfg(feature = "ssr")]
    let live = {
        let t = query.read_untracked().get("token").unwrap_or_default();
        query.read_untracked().get("used").is_none() && crate::context::server_context().is_ok_and(|c| (c.setup_link_live)(&t))
    };
    #[cfg(not(feature = "ssr"))]
    let live = true;
    if !live {
        return view! {
            <Title text="First-run setup" />
            <section class="auth">
                <h1>"This setup link was used"</h1>
                <p role="alert">"A setup link works once, and only until the server restarts. If you created the first admin with it, "
                    <a href="/login">"sign in"</a> "; otherwise an admin can be created on the server with "
                    <code>"arbiter user add NAME --role admin"</code> ", or restart the server to print a new link (while it has no user)."</p>
            </section>
        }
        .into_any();
    }
    view! {
        <Title text="First-run setup" />
        <section class="auth">
            <h1>"Create the first admin"</h1>
            <p>"This link works once: the account you create here administers this Arbiter."</p>
            {move || error().map(|e| view! { <p class="error" role="alert">{e}</p> })}
            <form method="post" action="/setup" class="stack">
                <input type="hidden" name="token" value=token />
                <label>"User name" <input name="username" autocomplete="username" required autofocus /></label>
                <label>"Password (at least 12 characters)"
                    <input name="password" type="password" autocomplete="new-password" required minlength="12" />
                </label>
                <label>"Password again" <input name="again" type="password" autocomplete="new-password" required /></label>
                <button type="submit">"Create admin and sign in"</button>
            </form>
        </section>
    }
    .into_any()
}
