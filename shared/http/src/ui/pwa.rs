//! The installable inbox (issue 41): the web app manifest, the app icons, the service worker
//! (`/inbox/sw.js`, allowed the whole origin as its scope) and the page it shows when there is
//! no network. All static, served without a session: an installed app must open its shell
//! before anyone logs in.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::html;

const MANIFEST: &str = include_str!("pwa/manifest.webmanifest");
const SERVICE_WORKER: &str = include_str!("pwa/sw.js");
const REGISTER: &str = include_str!("pwa/pwa.js");

/// The icons by file name (drawn by scripts/make_icons.py).
const ICONS: [(&str, &[u8]); 4] = [
    ("icon-192.png", include_bytes!("pwa/icon-192.png")),
    ("icon-512.png", include_bytes!("pwa/icon-512.png")),
    ("icon-maskable-512.png", include_bytes!("pwa/icon-maskable-512.png")),
    ("apple-touch-icon.png", include_bytes!("pwa/apple-touch-icon.png")),
];

/// `GET /inbox/manifest.webmanifest`.
pub async fn manifest() -> Response {
    ([(header::CONTENT_TYPE, "application/manifest+json")], MANIFEST).into_response()
}

/// `GET /inbox/sw.js`: revalidated on every update check (`no-cache`), and allowed to control
/// the whole origin — the list page is `/inbox`, outside the script's own `/inbox/` scope.
pub async fn service_worker() -> Response {
    let mut resp = ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], SERVICE_WORKER).into_response();
    let h = resp.headers_mut();
    h.insert("service-worker-allowed", HeaderValue::from_static("/"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// `GET /inbox/pwa.js`: registers the service worker.
pub async fn register_script() -> Response {
    ([(header::CONTENT_TYPE, "text/javascript; charset=utf-8")], REGISTER).into_response()
}

/// `GET /inbox/icons/{name}`.
pub async fn icon(Path(name): Path<String>) -> Response {
    match ICONS.iter().find(|(n, _)| *n == name) {
        Some((_, bytes)) => {
            let mut resp = ([(header::CONTENT_TYPE, "image/png")], *bytes).into_response();
            resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400"));
            resp
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// `GET /inbox/offline`: what the installed app shows without a network (the service worker
/// keeps a copy). Nothing is shown from a cache and nothing is queued: an answer counts only
/// once the Hub has it.
pub async fn offline() -> Response {
    let body = html! {
        h1 { "You are offline" }
        p { "The inbox needs the Hub to show and answer messages, so nothing here could be trusted to be current. "
            "Reconnect, then " a href="/inbox" { "open the inbox again" } "." }
        p.hint { "No answer is kept on this device to send later: an answer reaches its agent only once the Hub records it." }
    };
    super::respond(StatusCode::OK, super::page("Offline", None, body))
}
