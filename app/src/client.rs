//! The browser's one way to call the REST API: send a JSON body (or none) with the session cookie,
//! then read the JSON answer, or the server's own words (`{"error": …}`) when it refuses. Every
//! island's action goes through it, so a button and a CI job take the same path.

/// The HTTP methods the islands use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Post,
    Put,
    Delete,
}

/// Sends `body` as JSON (none when `None`) and returns the answer, or the server's message.
#[cfg(feature = "hydrate")]
pub async fn call(method: Method, url: &str, body: Option<&serde_json::Value>) -> Result<serde_json::Value, String> {
    use gloo_net::http::Request;
    let request = match method {
        Method::Post => Request::post(url),
        Method::Put => Request::put(url),
        Method::Delete => Request::delete(url),
    };
    let sent = match body {
        Some(b) => request.json(b).map_err(|e| e.to_string())?.send().await,
        None => request.send().await,
    };
    let response = sent.map_err(|e| format!("the server could not be reached ({e})"))?;
    if response.ok() {
        Ok(response.json().await.unwrap_or_default())
    } else {
        let refusal: Option<wire::error::JsonError> = response.json().await.ok();
        Err(refusal.map(|r| r.error).unwrap_or_else(|| format!("the server answered {}", response.status())))
    }
}

/// Sends the request in the background and hands its result to `done` (on the server, does nothing:
/// islands act only in the browser).
pub fn spawn_call(
    method: Method,
    url: String,
    body: Option<serde_json::Value>,
    done: impl FnOnce(Result<serde_json::Value, String>) + 'static,
) {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move { done(call(method, &url, body.as_ref()).await) });
    #[cfg(not(feature = "hydrate"))]
    let _ = (method, url, body, done);
}

/// Puts `text` on the clipboard; true when the browser took it (browser only).
pub fn copy_to_clipboard(text: &str) -> bool {
    #[cfg(feature = "hydrate")]
    if let Some(w) = web_sys::window() {
        let _ = w.navigator().clipboard().write_text(text);
        return true;
    }
    let _ = text;
    false
}

/// Opens `path` in the current tab (browser only).
pub fn go(path: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(w) = web_sys::window() {
        let _ = w.location().set_href(path);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = path;
}

/// Loads the current page again (browser only).
pub fn reload() {
    #[cfg(feature = "hydrate")]
    if let Some(w) = web_sys::window() {
        let _ = w.location().reload();
    }
}
