//! The reviewer's page in a real headless browser: Debian's `chromium` driven over
//! WebDriver (`chromium-driver`'s `chromedriver`) by `fantoccini`, against the real
//! daemon with `--listen`. Log in with a reviewer token through the form; a request
//! dropped into the inbox appears without a reload, and one answered elsewhere leaves;
//! answer a single-select (with the keys), a multi-select with Other, and a batch;
//! approve one plan review and decline another with feedback; check each outcome file
//! and the event log's `web:NAME`. A request with `<script>`, HTML and terminal escapes
//! in every text field renders as text and runs nothing.
//!
//! With `DSHQ_SCREENSHOTS=DIR` set, the test also saves the README's screenshots there
//! (`web-queue.png`, `web-plan-review.png`, `web-history.png`).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::api::{host, token};
use crate::helpers::{wait_until, Env, DEADLINE};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// The hostile payload put in every text field.
const EVIL: &str = "<script>window.__pwned=1;document.title='PWNED'</script><img src=x onerror=\"window.__pwned=1\"><b id=pwned>bold</b>\u{1b}[31mred";

pub(crate) struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free loopback port (bound and let go: the next process binds it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn start_driver() -> (Driver, String) {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: apt-get install chromium chromium-driver"
        );
    }
    let port = free_port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chromedriver");
    let url = format!("http://127.0.0.1:{port}");
    let ready = wait_until(DEADLINE, || {
        ureq::get(&format!("{url}/status"))
            .timeout(Duration::from_secs(2))
            .call()
            .ok()
            .and_then(|r| r.into_json::<Value>().ok())
            .is_some_and(|v| v["value"]["ready"] == true)
    });
    assert!(ready, "chromedriver did not become ready on {url}");
    (Driver(child), url)
}

/// The phone the page is checked on: 390 CSS pixels wide (an iPhone 12 to 15).
const PHONE: (u32, u32) = (390, 844);

pub(crate) async fn browser(driver: &str, profile: &Path, phone: bool) -> Client {
    let mut caps = serde_json::Map::new();
    let mut options = json!({
        "binary": CHROMIUM,
        "args": [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync",
            "--window-size=1280,1100",
            format!("--user-data-dir={}", profile.display()),
        ]
    });
    if phone {
        // Chromium's own mobile emulation: the viewport, the pixel ratio, touch, and a
        // phone's user agent, as DevTools' device toolbar does.
        options["mobileEmulation"] = json!({
            "deviceMetrics": {"width": PHONE.0, "height": PHONE.1, "pixelRatio": 2.0, "touch": true},
            "userAgent": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"
        });
    }
    caps.insert("goog:chromeOptions".into(), options);
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(driver)
        .await
        .expect("a WebDriver session with headless chromium")
}

/// Wait (with the deadline) until `f` says yes.
pub(crate) async fn until<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while start.elapsed() < DEADLINE {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

pub(crate) async fn has(c: &Client, css: &str) -> bool {
    c.find_all(Locator::Css(css))
        .await
        .map(|v| !v.is_empty())
        .unwrap_or(false)
}

pub(crate) async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.expect("script runs")
}

/// On the login page: type `token`, submit, and wait for the queue.
pub(crate) async fn log_in_on_this_page(c: &Client, token: &str) {
    type_into(c, "#token", token).await;
    click(c, "section.login button[type=submit]").await;
    until("the queue", || async {
        c.title().await.is_ok_and(|t| t.starts_with("Queue"))
    })
    .await;
}

pub(crate) async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("click {css}: {e}"));
}

pub(crate) async fn type_into(c: &Client, css: &str, text: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"))
        .send_keys(text)
        .await
        .unwrap();
}

pub(crate) async fn body_text(c: &Client) -> String {
    c.find(Locator::Css("body"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// From a request view: review the answer, then send it from the summary page.
async fn review_and_send(c: &Client, id: &str, expect_in_summary: &[&str]) {
    click(c, "form#answer button[type=submit]").await;
    until("the summary page", || async {
        has(c, "#send-button").await
    })
    .await;
    let summary = body_text(c).await;
    for e in expect_in_summary {
        assert!(summary.contains(e), "summary lacks {e:?}: {summary}");
    }
    click(c, "#send-button").await;
    let done = format!("/?done={id}");
    until("the queue after sending", || async {
        c.current_url()
            .await
            .is_ok_and(|u| u.as_str().ends_with(&done))
    })
    .await;
}

async fn shoot(c: &Client, name: &str) {
    if let Ok(dir) = std::env::var("DSHQ_SCREENSHOTS") {
        let png = c.screenshot().await.expect("a screenshot");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(Path::new(&dir).join(name), png).unwrap();
    }
}

fn opts(labels: &[(&str, &str)]) -> Value {
    labels
        .iter()
        .map(|(l, d)| json!({"label": l, "description": d}))
        .collect()
}

fn requests() -> Vec<(&'static str, Value)> {
    let plan = "# Migrate the orders table\n\n1. Add `orders_v2` beside `orders`.\n2. Backfill in batches of **10k** rows.\n3. Switch reads, then writes.\n\n| step | risk |\n|---|---|\n| backfill | load |\n| switch | none |\n\nSee [the runbook](https://example.org/runbook).\n";
    vec![
        (
            "s1",
            json!({"id": "s1", "context": "ci", "timeout": "2h", "questions": [{"id": "db", "header": "Database",
            "question": "Which database should the service use?",
            "options": opts(&[("Postgres", "the team runs it already"), ("SQLite", "one file, no server")])}]}),
        ),
        (
            "m1",
            json!({"id": "m1", "context": "ci", "questions": [{"id": "envs", "header": "Deploy",
            "question": "Which environments get the release?", "multiSelect": true,
            "options": opts(&[("staging", "every merge"), ("canary", "5% of traffic"), ("production", "everyone")])}]}),
        ),
        (
            "b1",
            json!({"id": "b1", "context": "docs", "questions": [
            {"id": "name", "question": "What should the CLI be called?", "options": opts(&[("dshq", ""), ("hq", "")])},
            {"id": "why", "question": "One line for the changelog?"},
            {"id": "later", "question": "Anything else?", "options": opts(&[("no", "")])}]}),
        ),
        (
            "p1",
            json!({"id": "p1", "context": "ci", "questions": [{"id": "plan", "header": "Plan review",
            "question": "Approve the migration plan?", "detail": plan,
            "options": [{"label": "Approve", "description": "go ahead"}, {"label": "Revise", "description": "rework it"}],
            "intent": {"kind": "plan-review", "approve": "Approve"}}]}),
        ),
        (
            "p2",
            json!({"id": "p2", "context": "ci", "questions": [{"id": "plan", "question": "Approve the cleanup plan?",
            "detail": "Delete `tmp/` on every host.", "options": [{"label": "Ship it"}],
            "intent": {"kind": "plan-review", "approve": "Ship it"}}]}),
        ),
    ]
}

fn hostile() -> Value {
    json!({"id": "x1", "context": "ci", "meta": {"note": EVIL}, "questions": [
        {"id": "q", "header": EVIL, "question": EVIL, "detail": EVIL,
         "options": [{"label": format!("A {EVIL}"), "description": EVIL}, {"label": "B"}]},
        {"id": "plan", "question": EVIL, "detail": format!("# Plan\n\n{EVIL}\n\n<div>raw block</div>\n\n[x](javascript:window.__pwned=1) ![i](https://example.org/i.png)\n"),
         "options": [{"label": format!("Go {EVIL}")}], "intent": {"kind": "plan-review", "approve": format!("Go {EVIL}")}}]})
}

/// The request's events as `kind:actor`, in order.
pub(crate) fn actors(env: &Env, id: &str) -> Vec<String> {
    env.json(&["events", id])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e["kind"].as_str().unwrap(),
                e["actor"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_reviewer_answers_everything_in_a_real_browser_and_nothing_hostile_runs() {
    let (_driver, driver_url) = start_driver();
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    let profile = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser(&driver_url, profile.path(), false).await;

        // Log in through the form.
        c.goto(&format!("{}/login", h.base)).await.unwrap();
        log_in_on_this_page(&c, &rita).await;
        assert!(!c.current_url().await.unwrap().as_str().contains(&rita), "the token is never in a URL");

        // Requests dropped into the inbox appear without a reload.
        until("the page stream", || async { has(&c, "body[data-live=ready]").await }).await;
        js(&c, "window.__sameDocument = 'yes'; return null;").await;
        for (id, r) in requests() {
            env.drop_file(&format!("{id}.json"), r.to_string().as_bytes());
        }
        env.drop_file("x1.json", hostile().to_string().as_bytes());
        until("the dropped requests in the queue", || async {
            c.find_all(Locator::Css("#queue tr.row")).await.map(|v| v.len()).unwrap_or(0) == 6
        })
        .await;
        assert_eq!(js(&c, "return window.__sameDocument || null;").await, "yes", "no reload happened");
        shoot(&c, "web-queue.png").await;

        // The hostile request: visible as text in the queue and on its page, nothing runs.
        for path in ["/", "/r/x1"] {
            c.goto(&format!("{}{path}", h.base)).await.unwrap();
            until("the page", || async { has(&c, "main").await }).await;
            let text = body_text(&c).await;
            assert!(text.contains("<script>window.__pwned=1;document.title='PWNED'</script>"), "{path}: {text}");
            assert!(text.contains("\\x1b[31m"), "{path}: {text}");
            assert_ne!(c.title().await.unwrap(), "PWNED", "{path}: a script ran");
            assert_eq!(js(&c, "return window.__pwned === undefined;").await, true, "{path}: a script ran");
            assert!(!has(&c, "#pwned").await, "{path}: asker HTML became markup");
            assert!(!has(&c, "main img").await, "{path}: an image was loaded");
            let scripts = js(&c, "return document.scripts.length;").await;
            assert_eq!(scripts, 1, "{path}: only the page's own script");
        }
        let text = body_text(&c).await;
        assert!(text.contains("<div>raw block</div>"), "raw HTML in the plan is shown: {text}");
        assert!(text.contains("[image: i]") && text.contains("<javascript:window.__pwned=1>"), "{text}");
        assert!(!has(&c, "a[href^=javascript]").await);
        // Its summary page shows the hostile labels as text too (and is left unsent).
        click(&c, "input[name=q0][value=o0]").await;
        click(&c, "input[name=q1][value=o0]").await;
        click(&c, "form#answer button[type=submit]").await;
        until("the hostile summary", || async { has(&c, "#send-button").await }).await;
        let text = body_text(&c).await;
        assert!(text.contains("APPROVE") && text.contains("A <script>window.__pwned=1;"), "{text}");
        assert_eq!(js(&c, "return window.__pwned === undefined;").await, true);
        assert!(!has(&c, "#pwned").await);

        // Single-select, with the keys: j moves to it in the queue, Enter opens, 2 picks.
        c.goto(&h.base).await.unwrap();
        until("the queue rows", || async { has(&c, "#queue tr.row").await }).await;
        // Read in one script: the live queue may re-render between two WebDriver calls,
        // and an element found by one is stale for the next.
        let ids: Vec<String> = serde_json::from_value(
            js(
                &c,
                "return [...document.querySelectorAll('#queue tr.row')].map(r => r.dataset.id || '');",
            )
            .await,
        )
        .unwrap();
        let pos = ids.iter().position(|i| i == "s1").expect("s1 listed");
        let body = c.find(Locator::Css("body")).await.unwrap();
        for _ in 0..=pos {
            body.send_keys("j").await.unwrap();
        }
        assert!(has(&c, "tr.row.selected[data-id=s1]").await, "j selects s1");
        let enter: char = fantoccini::key::Key::Enter.into();
        body.send_keys(&enter.to_string()).await.unwrap();
        until("the request view", || async { c.current_url().await.is_ok_and(|u| u.path() == "/r/s1") }).await;
        until("the form", || async { has(&c, "fieldset.q").await }).await;
        c.find(Locator::Css("body")).await.unwrap().send_keys("2").await.unwrap();
        assert_eq!(js(&c, "return document.querySelector('input[name=q0][value=o1]').checked;").await, true);
        review_and_send(&c, "s1", &["SQLite"]).await;
        // The confirmation stays while the live queue changes under it (it used to be
        // replaced by the first refresh, within half a second).
        until("the page stream", || async { has(&c, "body[data-live=ready]").await }).await;
        assert!(body_text(&c).await.contains("Sent the answer to s1."));
        env.drop_file("late1.json", json!({"id": "late1", "context": "ci", "questions": [{"id": "q", "question": "Arrived after the answer?"}]}).to_string().as_bytes());
        until("late1 in the live queue", || async { has(&c, "tr.row[data-id=late1]").await }).await;
        assert!(!has(&c, "tr.row[data-id=s1]").await, "the queue did refresh");
        let text = body_text(&c).await;
        assert!(text.contains("Sent the answer to s1."), "the confirmation is gone after a live update: {text}");
        let o = env.wait_outcome("s1");
        assert_eq!(o["answer"]["answers"], json!([{"id": "db", "selected": ["SQLite"]}]));
        assert_eq!(o["provider"], "web:rita");
        assert!(actors(&env, "s1").contains(&"answered:web:rita".to_string()), "{:?}", actors(&env, "s1"));

        // Multi-select with Other; Enter in the Other field goes to the summary, never sends.
        c.goto(&format!("{}/r/m1", h.base)).await.unwrap();
        click(&c, "input[name=q0][value=o0]").await;
        click(&c, "input[name=q0][value=o2]").await;
        type_into(&c, "input[name='q0.other']", "a dark launch first\n").await;
        until("the summary page", || async { has(&c, "#send-button").await }).await;
        assert!(env.outcome("m1").is_none(), "Enter only reviews");
        click(&c, "#send-button").await;
        let o = env.wait_outcome("m1");
        assert_eq!(
            o["answer"]["answers"],
            json!([{"id": "envs", "selected": ["staging", "production"], "custom": "a dark launch first"}])
        );

        // A batch: a pick, free text, a skip; the summary lists every question. Sent
        // first without the pick: the form comes back with the question flagged and
        // everything entered kept, not a separate error page.
        c.goto(&format!("{}/r/b1", h.base)).await.unwrap();
        type_into(&c, "textarea[name='q1.other']", "Web page for reviewers").await;
        click(&c, "input[name='q2.skip']").await;
        click(&c, "form#answer button[type=submit]").await;
        until("the form, flagged", || async { has(&c, "fieldset.q.invalid[data-q='0'] #q0-problem").await }).await;
        assert!(has(&c, "form#answer").await && !has(&c, "#send-button").await);
        assert!(body_text(&c).await.contains("question 1: pick one"), "{}", body_text(&c).await);
        assert_eq!(js(&c, "return document.querySelector(\"textarea[name='q1.other']\").value;").await, "Web page for reviewers");
        assert_eq!(js(&c, "return document.querySelector(\"input[name='q2.skip']\").checked;").await, true);
        assert!(!has(&c, "fieldset.q.invalid[data-q='1']").await, "only the incomplete question is flagged");
        click(&c, "input[name=q0][value=o0]").await;
        review_and_send(&c, "b1", &["What should the CLI be called?", "One line for the changelog?", "skipped"]).await;
        let o = env.wait_outcome("b1");
        assert_eq!(
            o["answer"]["answers"],
            json!([{"id": "name", "selected": ["dshq"]}, {"id": "why", "selected": [], "custom": "Web page for reviewers"},
                   {"id": "later", "selected": []}])
        );

        // A plan review: the asker's options in order, then Decline with feedback, which
        // is the one pre-selected (never Approve); nothing focused; approve.
        c.goto(&format!("{}/r/p1", h.base)).await.unwrap();
        until("the plan", || async { has(&c, ".plan h2").await }).await;
        assert_eq!(
            js(&c, "return [...document.querySelectorAll('fieldset.q input[type=radio]')].map(i => i.value + (i.checked ? '*' : ''));").await,
            json!(["o0", "o1", "decline*"])
        );
        assert!(has(&c, ".plan table.md").await && has(&c, ".plan a[href='https://example.org/runbook']").await);
        assert_eq!(js(&c, "return document.activeElement === document.body;").await, true);
        shoot(&c, "web-plan-review.png").await;
        click(&c, "input[name=q0][value=o0]").await;
        review_and_send(&c, "p1", &["APPROVE"]).await;
        let o = env.wait_outcome("p1");
        assert_eq!(o["decision"], "approved");
        assert_eq!(o["answer"]["answers"], json!([{"id": "plan", "selected": ["Approve"]}]));

        // Another: decline with feedback (Enter in the feedback is a new line, not a send).
        c.goto(&format!("{}/r/p2", h.base)).await.unwrap();
        type_into(&c, "textarea[name='q0.other']", "Keep tmp/ on the build hosts.\nThey cache.").await;
        assert!(has(&c, "form#answer").await && !has(&c, "#send-button").await);
        click(&c, "input[name=q0][value=decline]").await;
        review_and_send(&c, "p2", &["DECLINE", "Keep tmp/ on the build hosts."]).await;
        let o = env.wait_outcome("p2");
        assert_eq!(o["decision"], "declined");
        assert_eq!(
            o["answer"]["answers"],
            json!([{"id": "plan", "selected": [], "custom": "Keep tmp/ on the build hosts.\nThey cache."}])
        );
        assert!(actors(&env, "p2").contains(&"answered:web:rita".to_string()));

        // One answered elsewhere (over the API) leaves the open queue without a reload.
        c.goto(&h.base).await.unwrap();
        until("x1 listed", || async { has(&c, "tr.row[data-id=x1]").await }).await;
        until("the page stream", || async { has(&c, "body[data-live=ready]").await }).await;
        js(&c, "window.__sameDocument = 'still'; return null;").await;
        let r = crate::api::call(
            "POST",
            &h.url("/requests/x1/answer"),
            Some(&rita),
            Some(json!({"answers": [{"id": "q", "selected": ["B"]}, {"id": "plan", "selected": [], "custom": "no"}]}).to_string().as_bytes()),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
        until("x1 to leave the queue", || async { !has(&c, "tr.row[data-id=x1]").await }).await;
        assert_eq!(js(&c, "return window.__sameDocument || null;").await, "still");
        assert_eq!(js(&c, "return window.__pwned === undefined;").await, true);

        // The history page, with its two pictures.
        c.goto(&format!("{}/history", h.base)).await.unwrap();
        until("the charts", || async { has(&c, "svg.chart").await }).await;
        assert_eq!(c.find_all(Locator::Css("svg.chart")).await.unwrap().len(), 2);
        let text = body_text(&c).await;
        assert!(text.contains("web:rita"), "{text}");
        assert_eq!(js(&c, "return window.__pwned === undefined;").await, true);
        shoot(&c, "web-history.png").await;

        c.close().await.unwrap();
    });
}

/// Whether the page is wider than the screen (it would scroll sideways).
async fn scrolls_sideways(c: &Client) -> Value {
    js(
        c,
        "const d = document.documentElement; \
         return d.scrollWidth > window.innerWidth ? [d.scrollWidth, window.innerWidth, \
           [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1) \
             .slice(0, 5).map(e => e.tagName + '.' + e.className)] : null;",
    )
    .await
}

#[test]
fn on_a_phone_the_queue_a_request_and_a_plan_review_fit_the_screen() {
    let (_driver, driver_url) = start_driver();
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    let profile = tempfile::tempdir().unwrap();
    for (id, r) in requests() {
        env.drop_file(&format!("{id}.json"), r.to_string().as_bytes());
    }
    // Long unbroken text, which is what pushes a narrow page sideways.
    env.drop_file(
        "w1.json",
        json!({"id": "w1", "context": "a-rather-long-context-name", "meta": {"pr": "https://git.example.com/shop/pull/112/files#diff-0123456789abcdef0123456789abcdef"},
               "questions": [{"id": "q", "header": "Deploy", "question": "Release https://git.example.com/shop/releases/tag/v2.14.0-rc.1+build.20261202 now?",
               "options": opts(&[("Yes", "ship it to every host in the fleet"), ("No", "")])}]})
        .to_string()
        .as_bytes(),
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser(&driver_url, profile.path(), true).await;
        c.goto(&format!("{}/login", h.base)).await.unwrap();
        assert_eq!(js(&c, "return window.innerWidth;").await, PHONE.0, "the phone's width is emulated");
        assert_eq!(scrolls_sideways(&c).await, Value::Null, "the login page");
        log_in_on_this_page(&c, &rita).await;
        until("every request listed", || async {
            c.find_all(Locator::Css("#queue tr.row")).await.map(|v| v.len()).unwrap_or(0) == 6
        })
        .await;
        assert_eq!(scrolls_sideways(&c).await, Value::Null, "the queue");
        shoot(&c, "web-phone-queue.png").await;

        for (path, shot) in [("/r/w1", "web-phone-request.png"), ("/r/s1", ""), ("/r/b1", ""), ("/r/p1", "web-phone-plan-review.png"), ("/history", "")] {
            c.goto(&format!("{}{path}", h.base)).await.unwrap();
            until("the page", || async { has(&c, "main").await }).await;
            assert_eq!(scrolls_sideways(&c).await, Value::Null, "{path}");
            if path == "/r/p1" {
                // The plan's table is there, scrolling inside its own box if it must; the
                // picture shows it with the decision under it.
                assert!(has(&c, ".plan table.md").await);
                js(&c, "document.querySelector('.plan table.md').scrollIntoView({block: 'start'}); return null;").await;
            }
            if !shot.is_empty() {
                shoot(&c, shot).await;
            }
        }

        // Usable, not only narrow: answer the request from the phone, tapping.
        c.goto(&format!("{}/r/w1", h.base)).await.unwrap();
        click(&c, "input[name=q0][value=o0]").await;
        review_and_send(&c, "w1", &["Yes"]).await;
        assert_eq!(scrolls_sideways(&c).await, Value::Null, "the queue after sending");
        assert_eq!(env.wait_outcome("w1")["answer"]["answers"], json!([{"id": "q", "selected": ["Yes"]}]));
        c.close().await.unwrap();
    });
}

/// Edit-then-approve on the page: the plan is offered in a box to edit; an edited plan
/// with a decline is flagged on the form; with Approve, the summary page shows the
/// unified diff (the asker's hostile text in it as text) before anything is sent; Send
/// records the edited plan, which the asker's outcome carries.
#[test]
fn a_reviewer_edits_a_plan_and_sees_the_diff_before_sending() {
    let (_driver, driver_url) = start_driver();
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    let plan = format!("{}Note: {EVIL}\n", crate::edit::PLAN);
    let mut req = crate::edit::plan_review("pe1");
    req["questions"][0]["detail"] = json!(plan);
    env.ask(&req).ok();
    let profile = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser(&driver_url, profile.path(), false).await;
        c.goto(&format!("{}/login", h.base)).await.unwrap();
        log_in_on_this_page(&c, &rita).await;

        c.goto(&format!("{}/r/pe1", h.base)).await.unwrap();
        until("the form", || async { has(&c, "fieldset.q").await }).await;
        // The box holds the plan as asked, closed until opened.
        let area = "textarea[name='q0.edit']";
        let value = format!("return document.querySelector(\"{area}\").value;");
        assert_eq!(js(&c, &value).await, json!(plan));
        assert_eq!(js(&c, "return document.querySelector('details.edit').open;").await, false);
        click(&c, "details.edit summary").await;
        // Edit it: a step inserted (set as a script would paste it), a line typed.
        js(&c, &format!(
            "const t = document.querySelector(\"{area}\"); \
             t.value = t.value.replace('2. Upgrade node a\\n3. Run', '2. Back up node a\\n3. Upgrade node a\\n4. Run'); return null;"
        ))
        .await;
        type_into(&c, area, "5. Tell the team").await;
        let approved = format!("{}Note: {EVIL}\n5. Tell the team\n", crate::edit::EDITED);

        // With the default (Decline with feedback) and no feedback: flagged, kept.
        type_into(&c, "textarea[name='q0.other']", "not yet").await;
        click(&c, "form#answer button[type=submit]").await;
        until("the form, flagged", || async { has(&c, "fieldset.q.invalid #q0-problem").await }).await;
        let text = body_text(&c).await;
        assert!(text.contains("EDIT_NOT_ALLOWED") && text.contains("undo the edit to decline"), "{text}");
        assert!(!has(&c, "#send-button").await);
        assert_eq!(js(&c, "return document.querySelector('details.edit').open;").await, true);
        assert_eq!(js(&c, &value).await.as_str().unwrap().replace("\r\n", "\n").trim_end(), approved.trim_end(), "the edit is kept");

        // Approve: the summary shows the diff, and nothing is sent yet.
        js(&c, "document.querySelector(\"textarea[name='q0.other']\").value = ''; return null;").await;
        click(&c, "input[name=q0][value=o0]").await;
        click(&c, "form#answer button[type=submit]").await;
        until("the summary page", || async { has(&c, "#send-button").await }).await;
        let text = body_text(&c).await;
        assert!(text.contains("APPROVE") && text.contains("as edited"), "{text}");
        let added: Vec<String> = serde_json::from_value(js(&c, "return [...document.querySelectorAll('pre.diff span.add')].map(s => s.textContent);").await).unwrap();
        let removed: Vec<String> = serde_json::from_value(js(&c, "return [...document.querySelectorAll('pre.diff span.del')].map(s => s.textContent);").await).unwrap();
        assert_eq!(added, ["+2. Back up node a", "+3. Upgrade node a", "+4. Run the smoke tests", "+5. Tell the team"]);
        assert_eq!(removed, ["-2. Upgrade node a", "-3. Run the smoke tests"]);
        assert!(text.contains("<script>window.__pwned=1;") && text.contains("\\x1b[31m"), "the asker's text as text: {text}");
        assert_eq!(js(&c, "return window.__pwned === undefined;").await, true, "a script ran");
        assert!(!has(&c, "#pwned").await, "asker HTML became markup");
        assert!(env.outcome("pe1").is_none(), "nothing is sent before Send");

        click(&c, "#send-button").await;
        until("the queue after sending", || async {
            c.current_url().await.is_ok_and(|u| u.as_str().ends_with("/?done=pe1"))
        })
        .await;
        c.close().await.unwrap();
    });
    let o = env.wait_outcome("pe1");
    let approved = format!("{}Note: {EVIL}\n5. Tell the team\n", crate::edit::EDITED);
    assert_eq!(o["decision"], "approved");
    assert_eq!(o["provider"], "web:rita");
    assert_eq!(
        o["answer"]["answers"],
        json!([{"id": "plan", "selected": ["Approve"], "edited": approved}])
    );
    assert_eq!(o["edited"]["plan"]["proposed"], json!(plan));
    assert_eq!(o["edited"]["plan"]["approved"], json!(approved));
    let diff = o["edited"]["plan"]["diff"].as_str().unwrap();
    assert!(
        diff.contains("+2. Back up node a\n") && diff.contains("+5. Tell the team\n"),
        "{diff}"
    );
    assert_eq!(env.json(&["audit", "verify"]).ok().json()["ok"], true);
}
