//! Share links from the page: the experiment's launcher or an admin makes a link (shown once, with a
//! copy button) or revokes every link. The REST API offers the same (`/api/v1/experiments/{id}/shares`).

use leptos::prelude::*;

/// Makes a share link and returns its URL (the only time the secret is shown).
#[server(prefix = "/fn", endpoint = "share")]
pub async fn create_share(id: i64) -> Result<String, ServerFnError> {
    let me = may_share(id).await?;
    let ctx = crate::context::server_context()?;
    let store = crate::error::store()?;
    let failed = crate::error::read_failed("the share link");
    let secret = (ctx.new_secret)();
    let share_id = store.insert_share_token(id, &(ctx.digest)(&secret), Some(me)).await.map_err(failed)?;
    store
        .audit(Some(me), "share.create", &format!("experiment:{id}"), None, &serde_json::json!({"share_token": share_id}))
        .await
        .map_err(failed)?;
    Ok(format!("{}/share/{secret}", ctx.base_url))
}

/// Revokes every live share link of the experiment; returns how many.
#[server(prefix = "/fn", endpoint = "unshare")]
pub async fn revoke_shares(id: i64) -> Result<u64, ServerFnError> {
    let me = may_share(id).await?;
    let store = crate::error::store()?;
    let failed = crate::error::read_failed("the share links");
    let n = store.revoke_share_tokens(id).await.map_err(failed)?;
    store.audit(Some(me), "share.revoke", &format!("experiment:{id}"), None, &serde_json::json!({"revoked": n})).await.map_err(failed)?;
    Ok(n)
}

/// The caller's user id when they launched experiment `id` or are an admin.
#[cfg(feature = "ssr")]
async fn may_share(id: i64) -> Result<i64, ServerFnError> {
    use crate::auth::{require, set_status, Principal, Role};
    let Principal::User { id: me, role, .. } = require(Role::Launcher)? else { unreachable!("require returns a user") };
    let owner = match crate::error::store()?.experiment_owner(id).await {
        Ok(o) => o,
        Err(store::StoreError::NotFound { .. }) => {
            set_status(404);
            return Err(ServerFnError::new(format!("not found: there is no experiment {id}")));
        }
        Err(e) => return Err(crate::error::read_failed("the experiment")(e)),
    };
    if role == Role::Admin || owner == Some(me) {
        Ok(me)
    } else {
        set_status(403);
        Err(ServerFnError::new(format!("forbidden: only experiment {id}'s launcher or an admin may share it")))
    }
}

#[island]
pub fn ShareBox(id: i64, shared: bool, may_share: bool) -> impl IntoView {
    let create = ServerAction::<CreateShare>::new();
    let revoke = ServerAction::<RevokeShares>::new();
    let live = RwSignal::new(shared);
    let link = RwSignal::new(None::<String>);
    let copied = RwSignal::new(false);
    Effect::new(move |_| {
        if let Some(Ok(url)) = create.value().get() {
            link.set(Some(url));
            live.set(true);
            copied.set(false);
        }
    });
    Effect::new(move |_| {
        if let Some(Ok(_)) = revoke.value().get() {
            link.set(None);
            live.set(false);
        }
    });
    let error = move || {
        [create.value().get().and_then(|r| r.err()), revoke.value().get().and_then(|r| r.err())]
            .into_iter()
            .flatten()
            .next()
            .map(|e| view! { <p class="error" role="alert">{crate::error::AppError::from(e).to_string()}</p> })
    };
    let copy = move |_| {
        #[cfg(feature = "hydrate")]
        if let (Some(url), Some(w)) = (link.get_untracked(), web_sys::window()) {
            let _ = w.navigator().clipboard().write_text(&url);
            copied.set(true);
        }
    };
    view! {
        <div class="share">
            <p class="share-state">{move || if live.get() { "🔗 Shared: anyone with a link can read this page" } else { "🔒 Private: signed-in users only" }}</p>
            {may_share.then(|| view! {
                <div class="share-actions">
                    <ActionForm action=create>
                        <input type="hidden" name="id" value=id />
                        <button type="submit">{move || if live.get() { "New share link" } else { "Share…" }}</button>
                    </ActionForm>
                    <Show when=move || live.get()>
                        <ActionForm action=revoke>
                            <input type="hidden" name="id" value=id />
                            <button type="submit" class="danger">"Revoke links"</button>
                        </ActionForm>
                    </Show>
                </div>
            })}
            {move || link.get().map(|url| view! {
                <div class="share-link">
                    <label>"Share link (shown once)" <input type="text" readonly value=url.clone() aria-label="Share link" /></label>
                    <button type="button" on:click=copy>{move || if copied.get() { "Copied ✓" } else { "Copy link" }}</button>
                </div>
            })}
            {error}
        </div>
    }
    .into_any()
}
