//! The browser UI: static HTML, CSS and JavaScript modules embedded in the
//! binary and served at `/` and under `/ui/`.
//!
//! The assets hold no data, so they are served without auth; every data
//! request the page makes goes to the public surfaces (`/stream`,
//! `/socket`, discovery) with the token. Each response carries its content
//! type, a Content-Security-Policy that allows scripts, styles and
//! connections from this origin only (no inline script, no remote
//! origin), `nosniff`, no referrer, and an `ETag` with `no-cache`, so a
//! browser revalidates and a new binary's assets are seen at once.

use axum::extract::Path;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::http::{error, App};

/// The policy every UI response carries: nothing but this origin's own
/// files and connections, no inline script or style, no framing.
pub(crate) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// One embedded file.
struct Asset {
    /// The path after `/ui/` (`index.html` is also served at `/`).
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("../ui/", $name)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the UI. A module the page imports but this list lacks
/// is caught by the test that follows every import.
static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("js/main.js", JS),
    asset!("js/dom.js", JS),
    asset!("js/token.js", JS),
    asset!("js/sse.js", JS),
    asset!("js/stream.js", JS),
    asset!("js/socket.js", JS),
    asset!("js/projection.js", JS),
    asset!("js/summary.js", JS),
    asset!("js/form.js", JS),
    asset!("js/command.js", JS),
    asset!("js/status.js", JS),
    asset!("js/notify.js", JS),
    asset!("js/timeline.js", JS),
    asset!("js/pace.js", JS),
    asset!("js/perf.js", JS),
    asset!("js/window.js", JS),
    asset!("js/sessions.js", JS),
    asset!("js/views/fleet.js", JS),
    asset!("js/views/session.js", JS),
    asset!("js/views/request.js", JS),
];

/// The UI's routes: `/` (the page) and `/ui/{file}`.
pub(crate) fn router() -> Router<App> {
    Router::new()
        .route("/", get(index))
        .route("/ui/{*file}", get(file))
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

async fn file(Path(file): Path<String>, headers: HeaderMap) -> Response {
    serve(&file, &headers)
}

fn serve(name: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        return error(StatusCode::NOT_FOUND, "not-found", "no such file in the UI");
    };
    let etag = format!("\"{:016x}\"", fnv1a(asset.body));
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, asset.content_type)], asset.body).into_response()
    };
    let h = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, etag);
    }
    for (name, value) in [
        (header::CACHE_CONTROL, "no-cache"),
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// FNV-1a, 64 bits: a stable validator for an embedded file.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn text(asset: &Asset) -> &str {
        std::str::from_utf8(asset.body).expect("UI files are UTF-8")
    }

    /// The relative module paths a JavaScript file imports, resolved
    /// against its own directory.
    fn imports(asset: &Asset) -> Vec<String> {
        let dir = asset.name.rsplit_once('/').map_or("", |(d, _)| d);
        let mut found = Vec::new();
        for line in text(asset).lines() {
            let line = line.trim();
            if !(line.starts_with("import ") || line.starts_with("} from ")) {
                continue;
            }
            let Some(spec) = line.split(['\'', '"']).nth(1) else {
                continue;
            };
            let mut parts: Vec<&str> = if dir.is_empty() {
                Vec::new()
            } else {
                dir.split('/').collect()
            };
            for piece in spec.split('/') {
                match piece {
                    "." => {}
                    ".." => {
                        parts.pop();
                    }
                    p => parts.push(p),
                }
            }
            found.push(parts.join("/"));
        }
        found
    }

    #[test]
    fn every_import_is_an_embedded_asset() {
        let names: BTreeSet<&str> = ASSETS.iter().map(|a| a.name).collect();
        let mut checked = 0;
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            for import in imports(asset) {
                assert!(
                    names.contains(import.as_str()),
                    "{} imports {import}, which is not embedded",
                    asset.name
                );
                checked += 1;
            }
        }
        assert!(checked > 10, "the import scan found only {checked} imports");
    }

    #[test]
    fn every_embedded_module_is_reachable_from_main() {
        let mut reached = BTreeSet::from(["js/main.js".to_owned()]);
        let mut todo = vec!["js/main.js".to_owned()];
        while let Some(name) = todo.pop() {
            let asset = ASSETS.iter().find(|a| a.name == name).unwrap();
            for import in imports(asset) {
                if reached.insert(import.clone()) {
                    todo.push(import);
                }
            }
        }
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            assert!(
                reached.contains(asset.name),
                "{} is never imported",
                asset.name
            );
        }
    }

    #[test]
    fn the_page_has_no_inline_script_or_style() {
        let html = text(&ASSETS[0]);
        assert!(html.contains(r#"<script type="module" src="/ui/js/main.js"></script>"#));
        assert_eq!(html.matches("<script").count(), 1, "one script, by src");
        assert!(!html.contains("<style"), "styles come from style.css");
        assert!(!html.contains(" style="), "no inline style attributes");
        let lower = html.to_ascii_lowercase();
        for handler in [
            " onclick=",
            " onload=",
            " onerror=",
            " onsubmit=",
            "javascript:",
        ] {
            assert!(!lower.contains(handler), "inline handler {handler}");
        }
        for asset in ASSETS {
            let body = text(asset);
            let remote = body.contains("http://") || body.contains("https://");
            // The SVG namespace is a name, not a fetch.
            assert!(
                !remote || asset.name == "icon.svg",
                "{} names a remote origin",
                asset.name
            );
        }
    }

    #[test]
    fn no_module_writes_html_from_strings() {
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let body = text(asset);
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
            ] {
                assert!(!body.contains(sink), "{} uses {sink}", asset.name);
            }
        }
    }

    #[test]
    fn etags_differ_with_content() {
        assert_ne!(fnv1a(b"a"), fnv1a(b"b"));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    }
}
