//! The dashboard page and everything it loads, embedded in the binary: the page
//! (`assets/dashboard/`) and uPlot, the chart library, vendored under `assets/uplot/`
//! at the version `assets/package.json` pins (`scripts/vendor-assets.sh` refreshes it;
//! `SHA256SUMS` beside the files records what it vendored). No asset comes from the
//! network.

/// The page.
pub const INDEX_HTML: &str = include_str!("../../assets/dashboard/index.html");
/// The page's script.
pub const DASHBOARD_JS: &str = include_str!("../../assets/dashboard/dashboard.js");
/// The page's style.
pub const DASHBOARD_CSS: &str = include_str!("../../assets/dashboard/dashboard.css");
/// uPlot's minified browser build.
pub const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
/// uPlot's style.
pub const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
/// uPlot's licence (MIT), served beside it.
pub const UPLOT_LICENSE: &str = include_str!("../../assets/uplot/LICENSE");

/// The content type and body served at `path`, if it is an asset.
pub fn find(path: &str) -> Option<(&'static str, &'static str)> {
    const JS: &str = "text/javascript; charset=utf-8";
    const CSS: &str = "text/css; charset=utf-8";
    Some(match path {
        "/assets/dashboard.js" => (JS, DASHBOARD_JS),
        "/assets/dashboard.css" => (CSS, DASHBOARD_CSS),
        "/assets/uPlot.iife.min.js" => (JS, UPLOT_JS),
        "/assets/uPlot.min.css" => (CSS, UPLOT_CSS),
        "/assets/uPlot.LICENSE" => ("text/plain; charset=utf-8", UPLOT_LICENSE),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;

    fn json(text: &str) -> serde_json::Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_vendored_uplot_is_the_pinned_version_byte_for_byte() {
        let sums = include_str!("../../assets/uplot/SHA256SUMS");
        let embedded = [
            ("uPlot.iife.min.js", UPLOT_JS),
            ("uPlot.min.css", UPLOT_CSS),
            ("LICENSE", UPLOT_LICENSE),
        ];
        assert_eq!(sums.lines().count(), embedded.len(), "{sums}");
        for (file, body) in embedded {
            let line = sums
                .lines()
                .find(|l| l.ends_with(&format!("  {file}")))
                .unwrap_or_else(|| panic!("SHA256SUMS has no line for {file}"));
            let want = line.split_whitespace().next().unwrap();
            let got: String = Sha256::digest(body.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(got, want, "{file} differs from what was vendored");
        }
        let pinned = json(include_str!("../../assets/package.json"));
        let version = pinned["dependencies"]["uplot"].as_str().unwrap();
        let lock = json(include_str!("../../assets/package-lock.json"));
        let locked = &lock["packages"]["node_modules/uplot"];
        assert_eq!(locked["version"], version, "package-lock.json");
        assert!(locked["integrity"].as_str().unwrap().starts_with("sha512-"));
        assert!(
            UPLOT_JS.starts_with(&format!(
                "/*! https://github.com/leeoniya/uPlot (v{version}) */"
            )),
            "the embedded uPlot is not v{version}"
        );
        assert!(UPLOT_LICENSE.contains("MIT License"));
    }

    #[test]
    fn the_page_loads_only_its_own_assets() {
        for src in ["/assets/dashboard.js", "/assets/uPlot.iife.min.js"] {
            assert!(INDEX_HTML.contains(&format!("src=\"{src}\"")), "{src}");
            assert!(find(src).is_some());
        }
        for href in ["/assets/dashboard.css", "/assets/uPlot.min.css"] {
            assert!(INDEX_HTML.contains(&format!("href=\"{href}\"")), "{href}");
            assert!(find(href).is_some());
        }
        for page in [INDEX_HTML, DASHBOARD_JS, DASHBOARD_CSS] {
            assert!(!page.contains("http://") && !page.contains("https://"));
            assert!(!page.contains("@import") && !page.contains("url("));
        }
        assert!(find("/assets/../Cargo.toml").is_none());
    }
}
