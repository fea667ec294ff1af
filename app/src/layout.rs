//! The frame around every page: header with navigation, the theme switch, and the footer.

use leptos::prelude::*;
use leptos_router::components::A;

#[component]
pub fn Layout(children: Children) -> impl IntoView {
    view! {
        <a class="skip" href="#main">"Skip to content"</a>
        <header class="top">
            <a class="brand" href="/">
                <img src="/favicon.svg" alt="" width="22" height="22" />
                "Arbiter"
            </a>
            <nav aria-label="Main">
                <A href="/experiments">"Experiments"</A>
                <A href="/launch">"Launch"</A>
                <A href="/import">"Import"</A>
                <A href="/trends">"Trends"</A>
                <A href="/bisections">"Bisections"</A>
                <A href="/suites">"Suites"</A>
            </nav>
            <UserMenu />
            <ThemeSwitch />
        </header>
        <main id="main">{children()}</main>
        <footer class="foot">
            "Arbiter " {env!("CARGO_PKG_VERSION")} " — did the change make it cheaper, faster, slower, or can we not tell yet?"
        </footer>
    }
}

/// Who is signed in, and the sign-out button (a form post, protected like every other).
#[component]
fn UserMenu() -> impl IntoView {
    view! {
        {crate::awaited::awaited(async move {
            match crate::auth::whoami().await {
                Ok(Some(user)) => view! {
                    <form class="user" method="post" action="/logout">
                        {(user.role == "admin").then(|| view! { <a href="/admin">"Admin"</a> })}
                        <a href="/account" title=format!("role: {}", user.role)>{user.name.clone()}</a>
                        <button type="submit">"Sign out"</button>
                    </form>
                }.into_any(),
                _ => view! { <a class="user" href="/login">"Sign in"</a> }.into_any(),
            }
        })}
    }
}

/// Cycles the colour scheme: follow the system, light, dark. Remembered in this browser.
#[island]
fn ThemeSwitch() -> impl IntoView {
    let theme = RwSignal::new(Theme::System);
    #[cfg(feature = "hydrate")]
    {
        if let Some(saved) = storage().and_then(|s| s.get_item("arbiter-theme").ok().flatten()) {
            theme.set(Theme::from_str(&saved));
        }
        Effect::new(move |_| {
            let t = theme.get();
            if let Some(root) = document().document_element() {
                // Effects run only once the page is hydrated: tests wait for this mark before they click.
                let _ = root.set_attribute("data-hydrated", "");
                let _ = match t {
                    Theme::System => root.remove_attribute("data-theme"),
                    other => root.set_attribute("data-theme", other.as_str()),
                };
            }
            if let Some(s) = storage() {
                let _ = s.set_item("arbiter-theme", t.as_str());
            }
        });
    }
    view! {
        <button
            class="theme"
            type="button"
            title="Colour scheme"
            aria-label=move || format!("Colour scheme: {}", theme.get().label())
            on:click=move |_| theme.update(|t| *t = t.next())
        >
            {move || theme.get().label()}
        </button>
    }
}

#[cfg(feature = "hydrate")]
fn storage() -> Option<web_sys::Storage> {
    window().local_storage().ok().flatten()
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Theme {
    System,
    Light,
    Dark,
}

impl Theme {
    fn next(self) -> Theme {
        match self {
            Theme::System => Theme::Light,
            Theme::Light => Theme::Dark,
            Theme::Dark => Theme::System,
        }
    }
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    fn as_str(self) -> &'static str {
        match self {
            Theme::System => "system",
            Theme::Light => "light",
            Theme::Dark => "dark",
        }
    }
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    fn from_str(s: &str) -> Theme {
        match s {
            "light" => Theme::Light,
            "dark" => Theme::Dark,
            _ => Theme::System,
        }
    }
    fn label(self) -> &'static str {
        match self {
            Theme::System => "◐ System",
            Theme::Light => "☀ Light",
            Theme::Dark => "☾ Dark",
        }
    }
}
