//! Scheduling and publishing, black-box: the real binary, a copy of a data
//! directory with one finished project, and local servers that speak the
//! platforms' OAuth and upload APIs.

mod publishing;
use publishing::Posting;

use std::time::Duration;

use publishing::platforms::{Fault, Platforms};
use publishing::{assert_error, at, read_dir_bytes, spawn_app_in, template, App};
use serde_json::{json, Value};

fn app_with(p: &Platforms) -> App {
    spawn_app_in(template().copy(), p.env())
}

fn clip() -> String {
    template().clips[0].0.clone()
}

async fn schedule(app: &App, token: &str, provider: &str, title: &str, secs: i64) -> Value {
    let (s, v) = app
        .post(
            &format!("/api/clips/{}/schedule", clip()),
            token,
            json!({"provider": provider, "title": title, "scheduledAt": at(secs)}),
        )
        .await;
    assert_eq!(s, 201, "{v}");
    assert_eq!(v["status"], "pending");
    v
}

#[tokio::test]
async fn connect_callback_refresh_and_disconnect() {
    let p = Platforms::start();
    let app = app_with(&p);
    let t = &template().token;

    let (s, v) = app
        .post("/api/integrations/myspace/connect", t, json!({}))
        .await;
    assert_error(s, &v, 404);
    let (s, v) = app
        .call(
            reqwest::Method::POST,
            "/api/integrations/youtube/connect",
            None,
            Some(json!({})),
        )
        .await;
    assert_error(s, &v, 401);

    // YouTube: state + PKCE S256; the emulator checks the verifier.
    let (s, c) = app
        .post("/api/integrations/youtube/connect", t, json!({}))
        .await;
    assert_eq!(s, 200, "{c}");
    let url = c["authorizeUrl"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/google/auth?", p.base)),
        "{url}"
    );
    let q: std::collections::HashMap<String, String> = reqwest::Url::parse(url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(q["client_id"], "yt-client");
    assert_eq!(q["state"], c["state"].as_str().unwrap());
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(
        q["redirect_uri"],
        format!("{}/api/integrations/youtube/callback", app.base)
    );
    assert_eq!(q["access_type"], "offline");
    p.lock().challenge = Some(q["code_challenge"].clone());
    let state = q["state"].clone();
    let cb = |code: &str, state: &str| {
        format!("/api/integrations/youtube/callback?code={code}&state={state}")
    };
    let (s, v) = app
        .call(reqwest::Method::GET, &cb("good-code", "forged"), None, None)
        .await;
    assert_error(s, &v, 400);
    assert!(v["message"].as_str().unwrap().starts_with("state"), "{v}");
    let (s, v) = app
        .call(
            reqwest::Method::GET,
            &cb("good-code", &state),
            Some(t),
            None,
        )
        .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(p.lock().verifier_ok, Some(true));
    assert_eq!(v["integration"]["accountName"], "Ana's channel");
    let (s, v) = app
        .call(
            reqwest::Method::GET,
            &cb("good-code", &state),
            Some(t),
            None,
        )
        .await;
    assert_error(s, &v, 400); // single use

    // A refused code fails cleanly; the other two platforms connect.
    let (_, c) = app
        .post("/api/integrations/tiktok/connect", t, json!({}))
        .await;
    assert!(
        c["authorizeUrl"]
            .as_str()
            .unwrap()
            .contains("client_key=tt%2Dclient"),
        "{c}"
    );
    assert!(!c["authorizeUrl"]
        .as_str()
        .unwrap()
        .contains("code_challenge"));
    let (s, v) = app
        .call(
            reqwest::Method::GET,
            &format!(
                "/api/integrations/tiktok/callback?code=bad&state={}",
                c["state"].as_str().unwrap()
            ),
            Some(t),
            None,
        )
        .await;
    assert_error(s, &v, 400);
    assert_eq!(v["error"], "oauth_failed");
    app.connect(t, "tiktok", &p).await;
    app.connect(t, "instagram", &p).await;
    let (_, list) = app.get("/api/integrations", t).await;
    assert_eq!(
        list["available"],
        json!(["tiktok", "instagram", "youtube"]),
        "{list}"
    );
    let list = list["integrations"].as_array().unwrap();
    assert_eq!(list.len(), 3, "{list:?}");
    assert!(list.iter().all(|i| i["active"] == true));
    let ig = list.iter().find(|i| i["provider"] == "instagram").unwrap();
    assert_eq!(ig["accountId"], "17841400000000001");

    // Tokens are encrypted at rest: no issued token appears in the database.
    let issued: Vec<String> = p.tokens_issued();
    let db = read_dir_bytes(&app.dir.path().join("data/db"));
    for tok in &issued {
        assert!(
            !db.windows(tok.len()).any(|w| w == tok.as_bytes()),
            "{tok} stored in clear"
        );
    }

    // Expired at the platform: refreshed once, then the upload goes through.
    p.expire_tokens();
    let post = schedule(&app, t, "youtube", "After refresh", 1).await;
    let done = app
        .wait_post(t, post["id"].as_str().unwrap(), |v| {
            v["status"] != "pending" && v["status"] != "publishing"
        })
        .await;
    assert_eq!(done["status"], "published", "{done}");
    assert_eq!(p.lock().refreshes.get("youtube"), Some(&1));

    // Disconnect: pending posts for it fail with the reason; scheduling needs it again.
    let later = schedule(&app, t, "tiktok", "Never", 3600).await;
    let (s, v) = app.delete("/api/integrations/tiktok", t).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["failedPosts"], 1);
    let (_, v) = app
        .get(
            &format!("/api/clips/scheduled/{}", later["id"].as_str().unwrap()),
            t,
        )
        .await;
    assert_eq!(v["status"], "failed");
    assert!(v["error"].as_str().unwrap().contains("disconnected"), "{v}");
    let (s, v) = app
        .post(
            &format!("/api/clips/{}/schedule", clip()),
            t,
            json!({"provider": "tiktok", "title": "x", "scheduledAt": at(60)}),
        )
        .await;
    assert_error(s, &v, 403);
    assert_eq!(v["error"], "integration_required");
    let (s, v) = app.delete("/api/integrations/tiktok", t).await;
    assert_error(s, &v, 404);
    let (_, n) = app.get("/api/notifications", t).await;
    let kinds: Vec<&str> = n["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"post_failed") && kinds.contains(&"post_published"),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn timer_fires_and_each_platform_publishes_through_faults() {
    let p = Platforms::start();
    let app = app_with(&p);
    let t = &template().token;
    for provider in ["youtube", "tiktok", "instagram"] {
        app.connect(t, provider, &p).await;
    }
    // Transient faults are retried with backoff; an expired Instagram token is refreshed once.
    p.fault("yt_init", Fault::Status(503, None));
    p.fault("yt_put", Fault::Status(429, Some(1)));
    p.fault("tt_upload", Fault::Status(500, None));
    p.fault("tt_status", Fault::Status(502, None));
    p.expire_tokens();
    let mut posts = Vec::new();
    for (prov, title) in [
        ("youtube", "YT post"),
        ("tiktok", "TT post"),
        ("instagram", "IG post"),
    ] {
        posts.push((
            prov,
            title,
            schedule(&app, t, prov, title, 2).await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        ));
    }
    let (_, v) = app
        .get(&format!("/api/clips/scheduled/{}", posts[0].2), t)
        .await;
    assert_eq!(v["status"], "pending", "not before its time");
    for (prov, title, id) in &posts {
        let v = app
            .wait_post(t, id, |v| {
                v["status"] == "published" || v["status"] == "failed"
            })
            .await;
        assert_eq!(v["status"], "published", "{prov}: {v}");
        let published = p.published(prov);
        assert_eq!(published.len(), 1, "{prov}: {published:?}");
        assert_eq!(published[0].1, *title);
        assert_eq!(v["platformPostId"], published[0].2.as_str());
    }
    assert!(
        p.hits("yt_init") >= 2 && p.hits("tt_upload") >= 2,
        "faults were retried"
    );
    assert!(p.hits("tt_upload") > 2, "the TikTok upload was chunked");
    assert!(p.lock().refreshes.get("instagram").copied().unwrap_or(0) >= 1);

    // A permanent refusal fails at once, with the platform's reason.
    p.fault("yt_init", Fault::Status(403, None));
    let id = schedule(&app, t, "youtube", "Forbidden", 0).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = app.wait_post(t, &id, |v| v["status"] == "failed").await;
    assert_eq!(v["attempts"], 0, "{v}");
    assert!(v["error"].as_str().unwrap().contains("403"), "{v}");
    // Transient errors beyond the limit: failed with the reason.
    for _ in 0..4 {
        p.fault("tt_creator", Fault::Status(503, None));
    }
    let id = schedule(&app, t, "tiktok", "Flaky", 0).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let v = app.wait_post(t, &id, |v| v["status"] == "failed").await;
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("gave up after 4 attempts"),
        "{v}"
    );
    assert_eq!(p.published("youtube").len(), 1);
    assert_eq!(p.published("tiktok").len(), 1);
    let (_, n) = app.get("/api/notifications", t).await;
    let count = |k: &str| {
        n["notifications"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["type"] == k)
            .count()
    };
    assert_eq!(
        (count("post_published"), count("post_failed")),
        (3, 2),
        "{n}"
    );
}

#[tokio::test]
async fn bulk_schedule_spaces_clips_by_score_and_lists_by_time() {
    let p = Platforms::start();
    let app = app_with(&p);
    let t = &template().token;
    app.connect(t, "youtube", &p).await;
    app.connect(t, "tiktok", &p).await;
    let start = at(7200);
    let bulk = format!("/api/projects/{}/bulk-schedule", template().project_id);
    let (s, v) = app.post(&bulk, t, json!({"scheduledAt": start, "intervalHours": 1.5, "providers": ["youtube", "tiktok", "youtube"], "caption": "Watch this"})).await;
    assert_eq!(s, 200, "{v}");
    let clips = &template().clips;
    let posts = v["scheduledPosts"].as_array().unwrap();
    assert_eq!(v["count"], clips.len() * 2);
    assert_eq!(posts.len(), clips.len() * 2);
    let mut ranked = clips.clone();
    ranked.sort_by_key(|c| std::cmp::Reverse(c.1));
    let start_ms = parse_ms(&start);
    for (i, (clip_id, _)) in ranked.iter().enumerate() {
        let mine: Vec<&Value> = posts
            .iter()
            .filter(|p| p["clipId"] == clip_id.as_str())
            .collect();
        assert_eq!(mine.len(), 2);
        let providers: Vec<&str> = mine
            .iter()
            .map(|p| p["provider"].as_str().unwrap())
            .collect();
        assert!(providers.contains(&"youtube") && providers.contains(&"tiktok"));
        for post in mine {
            assert_eq!(
                parse_ms(post["scheduledAt"].as_str().unwrap()),
                start_ms + i as i64 * 5_400_000,
                "{post}"
            );
            assert_eq!(post["title"], "Watch this");
            assert_eq!(post["status"], "pending");
        }
    }
    // Listed by scheduledAt, paginated.
    let (_, all) = app.get("/api/clips/scheduled?limit=100", t).await;
    let times: Vec<i64> = all["scheduledPosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| parse_ms(p["scheduledAt"].as_str().unwrap()))
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let (_, page) = app.get("/api/clips/scheduled?page=2&limit=1", t).await;
    assert_eq!(
        (
            page["total"].as_u64(),
            page["page"].as_u64(),
            page["limit"].as_u64()
        ),
        (Some(posts.len() as u64), Some(2), Some(1))
    );
    assert_eq!(
        page["scheduledPosts"][0]["id"],
        all["scheduledPosts"][1]["id"]
    );

    // All or nothing: one provider without an integration creates nothing.
    let (s, v) = app
        .post(
            &bulk,
            t,
            json!({"scheduledAt": start, "intervalHours": 1, "providers": ["tiktok", "instagram"]}),
        )
        .await;
    assert_error(s, &v, 403);
    let (_, after) = app.get("/api/clips/scheduled", t).await;
    assert_eq!(after["total"], all["total"]);

    // Change of mind: cancel one, move another.
    let first = all["scheduledPosts"][0]["id"].as_str().unwrap();
    let (s, v) = app
        .delete(&format!("/api/clips/scheduled/{first}"), t)
        .await;
    assert_eq!(s, 200, "{v}");
    let (s, _) = app.get(&format!("/api/clips/scheduled/{first}"), t).await;
    assert_eq!(s, 404);
    let second = all["scheduledPosts"][1]["id"].as_str().unwrap();
    let (s, v) = app
        .patch(
            &format!("/api/clips/scheduled/{second}"),
            t,
            json!({"scheduledAt": at(86_400)}),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    let (_, now) = app.get("/api/clips/scheduled?limit=100", t).await;
    assert_eq!(
        now["total"].as_u64().unwrap(),
        all["total"].as_u64().unwrap() - 1
    );
    let last = now["scheduledPosts"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["id"], second, "moved to the end of the list");
    assert!(p.published("youtube").is_empty() && p.published("tiktok").is_empty());
}

fn parse_ms(s: &str) -> i64 {
    // Same format as the server writes: YYYY-MM-DDTHH:MM:SS.mmmZ
    let (d, tm) = s.trim_end_matches('Z').split_once('T').unwrap();
    let v: Vec<i64> = d.split('-').map(|x| x.parse().unwrap()).collect();
    let (y, m, dd) = (v[0], v[1], v[2]);
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * m2 + 2) / 5 + dd - 1;
    let days = era * 146_097 + doe - 719_468;
    let (hms, ms) = tm.split_once('.').unwrap_or((tm, "0"));
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    (days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2]) * 1000 + ms.parse::<i64>().unwrap()
}

#[tokio::test]
async fn restart_rearms_timers_and_fires_overdue_posts() {
    let p = Platforms::start();
    let mut env = p.env();
    env.push(("CLIPFORGE_AUTH_ADMIN_TOKEN".into(), "admin-secret".into()));
    let app = spawn_app_in(template().copy(), env);
    let t = &template().token;
    app.connect(t, "youtube", &p).await;
    let soon = schedule(&app, t, "youtube", "Overdue", 2).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let later = schedule(&app, t, "youtube", "Tomorrow", 86_400).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cancelled = schedule(&app, t, "youtube", "Cancelled", 86_400).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // Down while the first post falls due.
    let mut app = app;
    app.kill();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(p.published("youtube").is_empty());
    let app = app.crash_and_restart();
    let v = app
        .wait_post(t, &soon, |v| v["status"] == "published")
        .await;
    assert_eq!(v["platformPostId"], "yt-video-1");
    let (_, v) = app.get(&format!("/api/clips/scheduled/{later}"), t).await;
    assert_eq!(v["status"], "pending");
    // Every pending post got its own supervised actor back at the restart;
    // a cancelled one's actor stops.
    let mut want = vec![cancelled.clone(), later.clone()];
    want.sort();
    assert_eq!(schedule_actors(&app, &want).await, want);
    let (s, _) = app
        .delete(&format!("/api/clips/scheduled/{cancelled}"), t)
        .await;
    assert_eq!(s, 200);
    assert_eq!(
        schedule_actors(&app, std::slice::from_ref(&later)).await,
        std::slice::from_ref(&later)
    );
    // A re-armed timer moves with a PATCH.
    let (s, v) = app
        .patch(
            &format!("/api/clips/scheduled/{later}"),
            t,
            json!({"scheduledAt": at(1)}),
        )
        .await;
    assert_eq!(s, 200, "{v}");
    app.wait_post(t, &later, |v| v["status"] == "published")
        .await;
    assert_eq!(p.published("youtube").len(), 2);
}

#[tokio::test]
async fn deleting_a_project_cancels_its_pending_posts() {
    let p = Platforms::start();
    let app = app_with(&p);
    let t = &template().token;
    let pid = &template().project_id;
    app.connect(t, "tiktok", &p).await;
    let soon = schedule(&app, t, "tiktok", "Soon", 2).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, bulk) = app
        .post(
            &format!("/api/projects/{pid}/bulk-schedule"),
            t,
            json!({"scheduledAt": at(3), "intervalHours": 0, "providers": ["tiktok"]}),
        )
        .await;
    assert!(s < 300, "{bulk}");
    let (_, list) = app.get("/api/clips/scheduled", t).await;
    let scheduled = list["total"].as_u64().unwrap();
    assert!(scheduled >= 2, "{list}");

    let (s, v) = app.delete(&format!("/api/projects/{pid}"), t).await;
    assert_eq!(s, 200, "{v}");
    let (_, list) = app.get("/api/clips/scheduled", t).await;
    assert_eq!(list["total"], 0, "cancelled with the project: {list}");
    let (s, v) = app.get(&format!("/api/clips/scheduled/{soon}"), t).await;
    assert_error(s, &v, 404);

    // Past every post's time, and after a restart that re-arms the stored
    // timers, the platform has still received nothing.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut app = app;
    app.kill();
    let app = app.crash_and_restart();
    let (s, _) = app.get("/api/clips/scheduled", t).await;
    assert_eq!(s, 200);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        p.published("tiktok").is_empty(),
        "{:?}",
        p.published("tiktok")
    );
    assert_eq!(p.hits("tt_creator") + p.hits("tt_init"), 0);
}

/// The posts with a live schedule actor, sorted, from `/admin/actors`
/// (each under the `scheduler` supervisor). An actor stops a moment after
/// its post is finished or cancelled: polled until `want` (sorted) or a
/// deadline.
async fn schedule_actors(app: &App, want: &[String]) -> Vec<String> {
    let mut last = Vec::new();
    for _ in 0..100 {
        let (s, v) = app.get("/admin/actors", "admin-secret").await;
        assert_eq!(s, 200, "{v}");
        let mut ids: Vec<String> = v["actors"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["kind"] == "schedule")
            .map(|a| {
                assert_eq!(a["supervisor"], "supervisor:scheduler", "{a}");
                a["id"].as_str().unwrap().to_string()
            })
            .collect();
        ids.sort();
        if ids == want {
            return ids;
        }
        last = ids;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    last
}
