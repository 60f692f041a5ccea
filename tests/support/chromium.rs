//! Headless Chromium (`/usr/bin/chromium`) driven through the DevTools protocol with
//! chromiumoxide: one fresh profile per browser, and every console message, uncaught
//! exception, log entry and network request of the page kept for the test to check.
//! [`Chromium::screenshot`] captures a part of the page (`Page.captureScreenshot`) as a
//! [`Shot`] whose pixels a test counts; [`Chromium::emulate_dark`] asks the page for
//! its dark styles (`Emulation.setEmulatedMedia`).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chromiumoxide::cdp::browser_protocol::emulation::MediaFeature;
use chromiumoxide::cdp::browser_protocol::log::{EventEntryAdded, LogEntryLevel};
use chromiumoxide::cdp::browser_protocol::network::EventRequestWillBeSent;
use chromiumoxide::cdp::browser_protocol::page::Viewport;
use chromiumoxide::cdp::js_protocol::runtime::{
    ConsoleApiCalledType, EventConsoleApiCalled, EventExceptionThrown,
};
use chromiumoxide::error::CdpError;
use chromiumoxide::page::ScreenshotParams;
use chromiumoxide::{Browser, BrowserConfig, Page};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

const CHROMIUM: &str = "/usr/bin/chromium";

/// A runtime for one browser test: chromiumoxide's handler and the page's event
/// collectors run on it beside the test's own steps.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A screenshot, decoded: `width × height` pixels, RGB.
pub(crate) struct Shot {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) rgb: Vec<[u8; 3]>,
}

impl Shot {
    /// Decodes a PNG as Chromium captures it (RGB or RGBA, 8 bits).
    fn decode(png_bytes: &[u8]) -> Shot {
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.bit_depth, png::BitDepth::Eight, "{info:?}");
        let channels = info.color_type.samples();
        assert!(channels >= 3, "{:?}", info.color_type);
        let rgb = buf[..info.buffer_size()]
            .chunks(channels)
            .map(|px| [px[0], px[1], px[2]])
            .collect();
        Shot {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    /// How many pixels satisfy `keep`.
    pub(crate) fn count(&self, keep: impl Fn([u8; 3]) -> bool) -> usize {
        self.rgb.iter().filter(|px| keep(**px)).count()
    }
}

/// Relative luminance of an sRGB colour (WCAG 2).
pub(crate) fn luminance([r, g, b]: [u8; 3]) -> f64 {
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
}

/// WCAG contrast ratio of two colours, 1 (none) to 21 (black on white).
pub(crate) fn contrast(a: [u8; 3], b: [u8; 3]) -> f64 {
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// Whether a colour is saturated: a chart's line or mark, not grey text or a border.
pub(crate) fn saturated([r, g, b]: [u8; 3]) -> bool {
    let (hi, lo) = (r.max(g).max(b), r.min(g).min(b));
    hi - lo > 60
}

/// A message from Chromium that chromiumoxide's handler could not read, or another
/// error of the handler (`message` is then `None`).
#[derive(Debug)]
pub(crate) struct Unread {
    pub(crate) error: String,
    /// The message as Chromium sent it (CDP's JSON).
    pub(crate) message: Option<String>,
}

/// A browser with one page open, and what the page did.
pub(crate) struct Chromium {
    browser: Browser,
    handler: JoinHandle<()>,
    pub(crate) page: Page,
    /// Console errors and warnings, uncaught exceptions, error log entries.
    pub(crate) problems: Arc<Mutex<Vec<String>>>,
    /// Every URL the page requested.
    pub(crate) requests: Arc<Mutex<Vec<String>>>,
    /// What chromiumoxide's handler could not read, in order: an event this Chromium
    /// sends in a shape chromiumoxide's protocol types reject (a newer enum value) is
    /// not delivered to listeners, but its message is kept here.
    pub(crate) unread: Arc<Mutex<Vec<Unread>>>,
    _profile: tempfile::TempDir,
}

/// Keeps every item of `events`, as `show` puts it, in `into` (when `show` says so).
fn collect<E: Send + 'static>(
    mut events: impl futures_util::Stream<Item = Arc<E>> + Unpin + Send + 'static,
    into: Arc<Mutex<Vec<String>>>,
    show: impl Fn(&E) -> Option<String> + Send + 'static,
) {
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            if let Some(text) = show(&event) {
                into.lock().unwrap().push(text);
            }
        }
    });
}

impl Chromium {
    /// Launches Chromium headless with a fresh profile and opens a blank page whose
    /// console, errors and requests are recorded from then on.
    pub(crate) async fn launch() -> Chromium {
        assert!(
            Path::new(CHROMIUM).exists(),
            "{CHROMIUM} is missing; `bash scripts/test.sh` installs it (apt-get install chromium)"
        );
        let profile = tempfile::tempdir().unwrap();
        let config = BrowserConfig::builder()
            .chrome_executable(CHROMIUM)
            .disable_default_args()
            .no_sandbox()
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .user_data_dir(profile.path())
            .window_size(1280, 2000)
            .launch_timeout(Duration::from_secs(30))
            .request_timeout(Duration::from_secs(30))
            // Keep what chromiumoxide cannot read (see `unread`) rather than drop it.
            .surface_invalid_messages()
            .build()
            .unwrap();
        let (browser, mut handler) = Browser::launch(config).await.expect("launch chromium");
        let unread = Arc::new(Mutex::new(Vec::new()));
        let kept = unread.clone();
        let handler = tokio::spawn(async move {
            while let Some(step) = handler.next().await {
                let unread = match step {
                    Ok(()) => continue,
                    Err(CdpError::InvalidMessage(message, e)) => Unread {
                        error: e.to_string(),
                        message: Some(message),
                    },
                    Err(e) => Unread {
                        error: e.to_string(),
                        message: None,
                    },
                };
                kept.lock().unwrap().push(unread);
            }
        });
        let page = browser.new_page("about:blank").await.unwrap();
        let problems = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let console = page
            .event_listener::<EventConsoleApiCalled>()
            .await
            .unwrap();
        collect(console, problems.clone(), |e| {
            matches!(
                e.r#type,
                ConsoleApiCalledType::Error | ConsoleApiCalledType::Warning
            )
            .then(|| format!("console {:?}: {:?}", e.r#type, e.args))
        });
        let thrown = page.event_listener::<EventExceptionThrown>().await.unwrap();
        collect(thrown, problems.clone(), |e| {
            Some(format!("uncaught: {:?}", e.exception_details))
        });
        let log = page.event_listener::<EventEntryAdded>().await.unwrap();
        collect(log, problems.clone(), |e| {
            matches!(e.entry.level, LogEntryLevel::Error | LogEntryLevel::Warning).then(|| {
                format!(
                    "log {:?}: {} {:?}",
                    e.entry.level, e.entry.text, e.entry.url
                )
            })
        });
        let sent = page
            .event_listener::<EventRequestWillBeSent>()
            .await
            .unwrap();
        collect(sent, requests.clone(), |e| Some(e.request.url.clone()));
        Chromium {
            browser,
            handler,
            page,
            problems,
            requests,
            unread,
            _profile: profile,
        }
    }

    /// Evaluates `js` in the page and reads its value.
    pub(crate) async fn eval<T: DeserializeOwned>(&self, js: &str) -> T {
        self.page
            .evaluate(js)
            .await
            .unwrap_or_else(|e| panic!("evaluating {js}: {e}"))
            .into_value()
            .unwrap_or_else(|e| panic!("reading the value of {js}: {e}"))
    }

    /// Polls `js` every 100 ms until it is true, at most `limit`.
    pub(crate) async fn wait_for(&self, js: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.eval::<bool>(js).await {
            assert!(
                Instant::now() < deadline,
                "still not true after {limit:?}: {js}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Pixels of each chart's canvas close to the colour `rgb` (a series' stroke),
    /// keyed by the chart's container id.
    pub(crate) async fn pixels_of(&self, rgb: [u8; 3]) -> serde_json::Value {
        let js = format!(
            "Object.fromEntries([...document.querySelectorAll('.chart')].map(el => {{
                const c = el.querySelector('canvas');
                if (!c) return [el.id, -1];
                const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                let n = 0;
                for (let i = 0; i < d.length; i += 4)
                    if (d[i + 3] > 200 && Math.abs(d[i] - {}) < 40 && Math.abs(d[i + 1] - {}) < 40
                        && Math.abs(d[i + 2] - {}) < 40) n++;
                return [el.id, n];
            }}))",
            rgb[0], rgb[1], rgb[2]
        );
        self.eval(&js).await
    }

    /// The bounding box of the first element matching `selector`, in CSS pixels of the
    /// page (not of the viewport): `[x, y, width, height]`.
    pub(crate) async fn rect_of(&self, selector: &str) -> [f64; 4] {
        let js = format!(
            "(() => {{ const r = document.querySelector({selector:?}).getBoundingClientRect();
                return [r.x + scrollX, r.y + scrollY, r.width, r.height]; }})()"
        );
        self.eval(&js).await
    }

    /// Captures `rect` of the page (`[x, y, width, height]`, CSS pixels, as
    /// [`Chromium::rect_of`] gives it) with `Page.captureScreenshot`, at scale 1.
    pub(crate) async fn screenshot(&self, [x, y, width, height]: [f64; 4]) -> Shot {
        let clip = Viewport {
            x,
            y,
            width,
            height,
            scale: 1.0,
        };
        let png = self
            .page
            .screenshot(ScreenshotParams::builder().clip(clip).build())
            .await
            .expect("Page.captureScreenshot");
        Shot::decode(&png)
    }

    /// Emulates a system that prefers dark colours (`prefers-color-scheme: dark`).
    pub(crate) async fn emulate_dark(&self) {
        self.page
            .emulate_media_features(vec![MediaFeature::new("prefers-color-scheme", "dark")])
            .await
            .expect("Emulation.setEmulatedMedia");
    }

    /// Fails unless the page logged no error or warning and requested nothing but
    /// `origin` (its own server).
    pub(crate) fn assert_clean(&self, origin: &str) {
        let problems = self.problems.lock().unwrap();
        assert!(
            problems.is_empty(),
            "the page logged problems: {problems:#?}"
        );
        let requests = self.requests.lock().unwrap();
        assert!(!requests.is_empty(), "no request recorded");
        let foreign: Vec<&String> = requests
            .iter()
            .filter(|u| !u.starts_with(origin) && !u.starts_with("data:") && *u != "about:blank")
            .collect();
        assert!(foreign.is_empty(), "requests beyond {origin}: {foreign:?}");
    }

    /// Closes the browser and waits for it to exit.
    pub(crate) async fn close(mut self) {
        let _ = self.browser.close().await;
        let _ = self.browser.wait().await;
        self.handler.abort();
    }
}
