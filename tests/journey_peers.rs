//! The application journeys' peers (`scripts/peers.sh`: `peer_go_httpbin`,
//! `peer_journey_django`) do what the journeys' tests count on, checked with plain
//! HTTP/1.1 requests (`support::journey::exchange`: no cookie jar, no redirect
//! followed), every one to 127.0.0.1: go-httpbin sets cookies, redirects and echoes
//! forms and files; the Django app's login takes a fresh CSRF token and refuses a POST
//! without one, its /stats/ counts what reached it, and its accounts' CSV lists every
//! seeded account. Skipped when a peer is not installed (a failure under
//! `HEADROOM_REQUIRE_ALL`, as `scripts/test.sh` sets).

use std::net::SocketAddr;

use crate::support::journey::{exchange, multipart, GoHttpbin, JourneyApp, Reply};

const FORM: &str = "application/x-www-form-urlencoded";

#[test]
fn go_httpbin_sets_cookies_redirects_and_echoes_forms_and_files() {
    let Some(bin) = GoHttpbin::start() else {
        return;
    };
    assert!(bin.url().starts_with("http://127.0.0.1:"), "{}", bin.url());
    let addr = bin.addr();

    let set = exchange(addr, "GET", "/cookies/set?session=abc&theme=dark", &[], b"");
    assert_eq!(set.status, 302, "{set:?}");
    assert_eq!(set.header("location"), Some("/cookies"));
    assert_eq!(set.set_cookie("session").as_deref(), Some("abc"), "{set:?}");
    assert_eq!(set.set_cookie("theme").as_deref(), Some("dark"), "{set:?}");

    let cookies = exchange(addr, "GET", "/cookies", &[("cookie", "session=abc")], b"");
    assert_eq!(cookies.status, 200);
    assert_eq!(json(&cookies)["cookies"]["session"], "abc");

    let redirect = exchange(addr, "GET", "/redirect/3", &[], b"");
    assert_eq!(redirect.status, 302);
    assert_eq!(redirect.header("location"), Some("/relative-redirect/2"));
    let to = exchange(
        addr,
        "GET",
        "/redirect-to?url=/anything&status_code=307",
        &[],
        b"",
    );
    assert_eq!(to.status, 307);
    assert_eq!(to.header("location"), Some("/anything"));

    let form = exchange(
        addr,
        "POST",
        "/post",
        &[("content-type", FORM)],
        b"name=alice&colour=blue",
    );
    assert_eq!(form.status, 200);
    assert_eq!(json(&form)["form"]["name"][0], "alice");
    assert_eq!(json(&form)["form"]["colour"][0], "blue");

    let (content_type, body) = multipart(
        &[("title", "report")],
        &[("doc", "notes.txt", "text/plain", b"two lines\nof text\n")],
    );
    let files = exchange(
        addr,
        "POST",
        "/post",
        &[("content-type", &content_type)],
        &body,
    );
    assert_eq!(files.status, 200, "{}", files.text());
    assert_eq!(json(&files)["form"]["title"][0], "report");
    assert_eq!(json(&files)["files"]["doc"][0], "two lines\nof text\n");

    assert_eq!(exchange(addr, "GET", "/status/418", &[], b"").status, 418);
}

#[test]
fn django_logs_in_with_a_fresh_csrf_token_and_greets_the_user() {
    let Some(app) = JourneyApp::start(5) else {
        return;
    };
    let addr = app.addr();
    let user = app.username(3);
    assert_eq!(user, "user0003");
    assert_eq!(app.stats().total_logins, 0);

    let (csrf_cookie, token) = login_form(addr);
    let login = post_login(
        addr,
        &csrf_cookie,
        &token,
        &user,
        &JourneyApp::password(&user),
    );
    assert_eq!(login.status, 302, "{}\n{}", login.text(), app.log());
    assert_eq!(login.header("location"), Some("/home/"));
    let session = login.set_cookie("sessionid").expect("a session cookie");
    // Django rotates the CSRF secret at login.
    let csrf_cookie = login.set_cookie("csrftoken").expect("a new csrftoken");
    let cookies = format!("csrftoken={csrf_cookie}; sessionid={session}");

    let home = exchange(addr, "GET", "/home/", &[("cookie", &cookies)], b"");
    assert_eq!(home.status, 200, "{home:?}");
    assert!(
        home.text()
            .contains(&format!(r#"<h1 id="greeting">Hello, {user}</h1>"#)),
        "{}",
        home.text()
    );

    let stats = app.stats();
    assert_eq!(stats.logins_of(&user), 1, "{stats:?}");
    assert_eq!(stats.total_logins, 1, "{stats:?}");
    assert_eq!(stats.failed_logins, 0, "{stats:?}");
    assert_eq!(stats.logins.len(), 5, "{stats:?}");

    // The upload form on /home/ carries a token for the rotated secret.
    let upload_token = hidden_token(&home.text());
    let (content_type, body) = multipart(
        &[("csrfmiddlewaretoken", &upload_token)],
        &[(
            "doc",
            "report.bin",
            "application/octet-stream",
            &[7u8; 1000],
        )],
    );
    let upload = exchange(
        addr,
        "POST",
        "/upload/",
        &[("cookie", &cookies), ("content-type", &content_type)],
        &body,
    );
    assert_eq!(upload.status, 200, "{}\n{}", upload.text(), app.log());
    let answer = json(&upload);
    assert_eq!(answer["name"], "report.bin");
    assert_eq!(answer["size"], 1000);
    assert_eq!(answer["user"], user.as_str());

    let logout = exchange(addr, "GET", "/logout/", &[("cookie", &cookies)], b"");
    assert_eq!(logout.status, 302);
    assert_eq!(logout.header("location"), Some("/login/"));
    let after = exchange(addr, "GET", "/home/", &[("cookie", &cookies)], b"");
    assert_eq!(after.status, 302, "the session ended with the logout");
    assert_eq!(after.header("location"), Some("/login/?next=/home/"));
}

#[test]
fn django_refuses_a_post_without_its_csrf_token_and_counts_wrong_passwords() {
    let Some(app) = JourneyApp::start(3) else {
        return;
    };
    let addr = app.addr();
    let user = app.username(1);
    let password = JourneyApp::password(&user);
    let (csrf_cookie, token) = login_form(addr);
    let credentials = format!("username={user}&password={password}");

    // The cookie without the form's token, and neither: Django's CsrfViewMiddleware.
    let cookie = format!("csrftoken={csrf_cookie}");
    let no_token = exchange(
        addr,
        "POST",
        "/login/",
        &[("cookie", &cookie), ("content-type", FORM)],
        credentials.as_bytes(),
    );
    assert_eq!(no_token.status, 403, "{}", no_token.text());
    let nothing = exchange(
        addr,
        "POST",
        "/login/",
        &[("content-type", FORM)],
        credentials.as_bytes(),
    );
    assert_eq!(nothing.status, 403);
    let stats = app.stats();
    assert_eq!(
        (stats.total_logins, stats.failed_logins),
        (0, 0),
        "{stats:?}"
    );

    let wrong = post_login(addr, &csrf_cookie, &token, &user, "not-the-password");
    assert_eq!(wrong.status, 200);
    assert!(
        wrong.text().contains(r#"id="error""#),
        "the form again, with an error: {}",
        wrong.text()
    );
    assert!(wrong.set_cookie("sessionid").is_none());
    let stats = app.stats();
    assert_eq!(
        (stats.total_logins, stats.failed_logins),
        (0, 1),
        "{stats:?}"
    );

    // Anonymous: /home/ sends to the login, /public/ answers and is counted.
    let home = exchange(addr, "GET", "/home/", &[], b"");
    assert_eq!(home.status, 302);
    assert_eq!(home.header("location"), Some("/login/?next=/home/"));
    for _ in 0..3 {
        assert_eq!(exchange(addr, "GET", "/public/", &[], b"").status, 200);
    }
    assert_eq!(app.stats().public_requests, 3);
    app.reset_stats();
    let stats = app.stats();
    assert_eq!(
        (stats.failed_logins, stats.public_requests),
        (0, 0),
        "{stats:?}"
    );
}

#[test]
fn django_seeds_a_thousand_accounts_and_their_csv() {
    let Some(app) = JourneyApp::start(1000) else {
        return;
    };
    let csv = std::fs::read_to_string(app.accounts_csv()).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1001, "a header and 1000 rows");
    assert_eq!(lines[0], "username,password");
    assert_eq!(lines[1], "user0001,pw-user0001");
    assert_eq!(lines[1000], "user1000,pw-user1000");
    assert_eq!(app.username(1000), "user1000");

    let stats = app.stats();
    assert_eq!(stats.accounts, 1000);
    assert_eq!(stats.logins.len(), 1000);
    assert!(stats.logins.values().all(|&n| n == 0), "{stats:?}");

    // The last account logs in like the first.
    let user = app.username(1000);
    let (csrf_cookie, token) = login_form(app.addr());
    let login = post_login(
        app.addr(),
        &csrf_cookie,
        &token,
        &user,
        &JourneyApp::password(&user),
    );
    assert_eq!(login.status, 302, "{}", login.text());
    assert_eq!(app.stats().logins_of(&user), 1);
}

/// `GET /login/`: the `csrftoken` cookie and the form's hidden `csrfmiddlewaretoken`.
fn login_form(addr: SocketAddr) -> (String, String) {
    let page = exchange(addr, "GET", "/login/", &[], b"");
    assert_eq!(page.status, 200, "{page:?}");
    let cookie = page.set_cookie("csrftoken").expect("a csrftoken cookie");
    (cookie, hidden_token(&page.text()))
}

/// `POST /login/` with the CSRF cookie and token and the credentials.
fn post_login(addr: SocketAddr, cookie: &str, token: &str, user: &str, password: &str) -> Reply {
    let body = format!("csrfmiddlewaretoken={token}&username={user}&password={password}");
    exchange(
        addr,
        "POST",
        "/login/",
        &[
            ("cookie", &format!("csrftoken={cookie}")),
            ("content-type", FORM),
        ],
        body.as_bytes(),
    )
}

/// The value of the page's `csrfmiddlewaretoken` hidden field (Django writes it as
/// `name="csrfmiddlewaretoken" value="..."`).
fn hidden_token(html: &str) -> String {
    let marker = r#"name="csrfmiddlewaretoken" value=""#;
    let start = html.find(marker).expect("a csrfmiddlewaretoken field") + marker.len();
    let len = html[start..].find('"').unwrap();
    html[start..start + len].to_string()
}

fn json(reply: &Reply) -> serde_json::Value {
    serde_json::from_slice(&reply.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", reply.text()))
}
