"""The web console in a real browser (Debian's chromium through Playwright).

Run by tests/console.rs, which starts the server and the platform emulator
and passes: CLIPFORGE_URL, CONSOLE_VIDEO (the espeak-ng speech video),
CONSOLE_SCREENSHOTS (a folder), AXE_JS (axe-core's axe.min.js).
Prints one line per check and closes with "N passed, M failed".
"""

import datetime as dt
import os
import re
import sys
import time
import traceback

from playwright.sync_api import expect, sync_playwright

BASE = os.environ["CLIPFORGE_URL"].rstrip("/")
VIDEO = os.environ["CONSOLE_VIDEO"]
SHOTS = os.environ["CONSOLE_SCREENSHOTS"]
AXE_JS = os.environ["AXE_JS"]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PROCESSING_TIMEOUT_MS = 900_000

passed, failed, figures = [], [], {}


class Run:
    """One pass of the main path in one browser context (desktop or phone)."""

    def __init__(self, page, name):
        self.page, self.name = page, name
        self.email = f"{name}-{int(time.time())}@example.com"

    def shot(self, what):
        path = os.path.join(SHOTS, f"{self.name}-{what}.png")
        self.page.screenshot(path=path, full_page=True)
        return path

    def axe(self, what):
        """No serious or critical axe-core violations on the current page."""
        if not self.page.evaluate("typeof window.axe !== 'undefined'"):
            self.page.add_script_tag(path=AXE_JS)
        result = self.page.evaluate("axe.run(document, {resultTypes: ['violations']})")
        bad = [v for v in result["violations"] if v["impact"] in ("serious", "critical")]
        detail = "; ".join(
            f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}" for v in bad)
        assert not bad, f"axe on {what}: {detail}"

    def page_check(self, what):
        self.shot(what)
        self.axe(what)


def check(run, label, fn):
    """Runs one step; a failed step ends its run (later steps depend on it)."""
    name = f"{run.name}: {label}"
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - every failure is reported
        failed.append(name)
        print(f"FAIL {name}: {e}", flush=True)
        traceback.print_exc(limit=2)
        try:
            run.shot("failure")
        except Exception:  # noqa: BLE001
            pass
        raise StopRun() from e
    passed.append(name)
    print(f"ok   {name}", flush=True)


class StopRun(Exception):
    pass


def nav(page, name):
    """Follows a link of the main navigation."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True).click()


def main_path(run: Run):
    page = run.page

    def sign_up():
        page.goto(BASE + "/")
        expect(page).to_have_url(re.compile(r"/sign-in"))
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        run.page_check("sign-in")
        page.get_by_role("link", name="Sign up").click()
        page.get_by_label("Name").fill("Ana Example")
        page.get_by_label("Email").fill(run.email)
        page.get_by_label("Password").fill("correct horse battery")
        run.page_check("sign-up")
        page.get_by_role("button", name="Sign up").click()
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()

    def dashboard():
        # Time to first render: a fresh load of the dashboard until the
        # project list (here: its empty state) and the credits are shown.
        page.goto(BASE + "/")
        page.get_by_text("No projects yet").wait_for()
        ms = page.evaluate("performance.now()")
        figures.setdefault("dashboard first render (ms)", []).append(round(ms))
        expect(page.get_by_test_id("credits-left")).to_contain_text("credits left")
        run.page_check("dashboard-empty")
        # Portuguese through the switch, then back.
        page.get_by_label("Language").select_option("pt")
        expect(page.get_by_role("heading", name="Projetos")).to_be_visible()
        expect(page.get_by_role("button", name="Novo projeto")).to_be_visible()
        run.shot("dashboard-pt")
        page.get_by_label("Idioma").select_option("en")
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()

    def upload_and_create():
        page.get_by_role("button", name="New project").click()
        # A file that is not a video: the server's 415, said plainly.
        page.get_by_label("Video file").set_input_files(
            {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not a video"})
        expect(page.get_by_role("alert")).to_contain_text("file type is not supported")
        page.get_by_label("Video file").set_input_files(VIDEO)
        expect(page.get_by_text("Uploaded:")).to_be_visible(timeout=60_000)
        run.page_check("new-project")
        page.get_by_label("Clip length").select_option("15-30")
        page.get_by_role("button", name="Create project").click()
        expect(page).to_have_url(re.compile(r"/projects/[0-9a-f-]{36}$"))

    def progress_to_done():
        status = page.get_by_test_id("project-status")
        seen_progress = False
        deadline = time.time() + PROCESSING_TIMEOUT_MS / 1000
        while time.time() < deadline:
            state = status.get_attribute("data-state")
            if state in ("completed", "cancelled"):
                break
            if state == "failed":
                raise AssertionError("the project failed: " + page.inner_text("main"))
            if not seen_progress and page.get_by_role("progressbar", name="Transcribe").count():
                seen_progress = True
                run.page_check("project-progress")
            page.wait_for_timeout(250)
        assert status.get_attribute("data-state") == "completed", "processing did not finish"
        expect(status).to_have_text("Completed")
        assert seen_progress, "no live per-stage progress was shown"
        expect(page.get_by_role("article").first).to_be_visible()

    def play_clip():
        clip = page.get_by_role("article").first
        video = clip.locator("video")
        expect(video).to_have_count(1)
        video.evaluate("v => { v.muted = true; return v.play(); }")
        page.wait_for_function(
            "v => v.readyState >= 2 && v.currentTime > 0.3", arg=video.element_handle(), timeout=30_000)
        t1 = video.evaluate("v => v.currentTime")
        page.wait_for_timeout(500)
        t2 = video.evaluate("v => v.currentTime")
        assert t2 > t1, f"currentTime did not advance ({t1} -> {t2})"
        video.evaluate("v => v.pause()")
        expect(clip.get_by_text(re.compile(r"Score \d+"))).to_be_visible()
        expect(clip.locator(".meta").first).to_contain_text(re.compile(r"\d+:\d\d–\d+:\d\d"))

    def download_srt():
        clip = page.get_by_role("article").first
        with page.expect_download() as d:
            clip.get_by_role("link", name="Download SRT").click()
        text = open(d.value.path(), encoding="utf-8").read()
        assert re.search(r"^1\s*$", text, re.M) and "-->" in text, f"not an SRT file: {text[:200]!r}"
        clip.get_by_text("Transcript").click()
        expect(clip.locator(".transcript li").first).to_be_visible()
        run.page_check("project-clips")

    def template():
        nav(page, "Caption templates")
        expect(page.get_by_role("heading", name="Caption templates")).to_be_visible()
        page.get_by_role("button", name="New template").click()
        editor = page.get_by_role("form", name="New template")
        editor.get_by_label("Name").fill("Loud yellow")
        editor.get_by_label("Animation").select_option("bounce")
        expect(editor.get_by_role("figure", name="Live preview")).to_be_visible()
        run.page_check("template-editor")
        editor.get_by_role("button", name="Save").click()
        expect(page.get_by_role("heading", name="Loud yellow")).to_be_visible()
        run.page_check("templates")

    def connect():
        nav(page, "Integrations")
        page.get_by_role("button", name="Connect TikTok").click()
        # Emulator consent page → callback → back to the console.
        expect(page).to_have_url(re.compile(r"/integrations\?connected=tiktok"))
        expect(page.get_by_text("TikTok is connected.")).to_be_visible()
        expect(page.get_by_role("button", name="Disconnect TikTok")).to_be_visible()
        run.page_check("integrations")

    def schedule():
        nav(page, "Projects")
        page.locator(".project-card a").first.click()
        clip = page.get_by_role("article").first
        clip.get_by_role("button", name="Schedule").click()
        form = clip.get_by_role("form")
        form.get_by_label("Platform").select_option("tiktok")
        form.get_by_label("Post title").fill("First post from the console")
        # The next whole minute at least 15 s away (the field has minutes).
        when = (dt.datetime.now() + dt.timedelta(seconds=75)).replace(second=0, microsecond=0)
        form.get_by_label("Date and time").fill(when.strftime("%Y-%m-%dT%H:%M"))
        form.get_by_role("button", name="Save").click()
        expect(form.get_by_text("Scheduled")).to_be_visible()
        nav(page, "Schedule")
        expect(page.get_by_text("First post from the console")).to_be_visible()
        run.page_check("schedule-pending")

    def credits():
        nav(page, "Credits and plans")
        expect(page.get_by_role("heading", name="Credit history")).to_be_visible()
        expect(page.get_by_role("cell", name="charge").first).to_be_visible()
        run.page_check("credits")

    def profile():
        nav(page, "Profile")
        page.get_by_label("Name").fill("Ana Renamed")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_text("Saved.")).to_be_visible()
        run.page_check("profile")

    def published():
        nav(page, "Schedule")
        post = page.locator("li.post", has_text="First post from the console")
        expect(post).to_have_attribute("data-status", "published", timeout=240_000)
        expect(post.get_by_text("Published")).to_be_visible()
        run.page_check("schedule-published")

    def notification():
        page.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile(r"^Notifications")).click()
        expect(page.locator("[data-type=project_completed]").first).to_be_visible()
        unread_before = int(re.search(r"(\d+) unread", page.get_by_role("status").inner_text()).group(1))
        assert unread_before >= 1, "no unread notification"
        run.page_check("notifications")
        page.get_by_role("button", name=re.compile(r"^Mark as read")).first.click()
        expect(page.get_by_role("status")).to_have_text(f"{unread_before - 1} unread")

    def sign_out():
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        page.goto(BASE + "/credits")
        expect(page).to_have_url(re.compile(r"/sign-in"))

    steps = [("sign up", sign_up), ("dashboard", dashboard), ("upload and create", upload_and_create),
             ("live progress to done", progress_to_done), ("play a clip", play_clip),
             ("download SRT", download_srt), ("template", template), ("connect TikTok", connect),
             ("schedule a clip", schedule), ("credits", credits), ("profile", profile),
             ("post published", published), ("read a notification", notification),
             ("sign out", sign_out)]
    for label, fn in steps:
        check(run, label, fn)


def main():
    os.makedirs(SHOTS, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for name, opts in [
            ("desktop", {"viewport": {"width": 1280, "height": 900}}),
            ("phone", {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
                       "device_scale_factor": 2}),
        ]:
            ctx = browser.new_context(locale="en-US", accept_downloads=True, **opts)
            ctx.set_default_timeout(30_000)
            try:
                main_path(Run(ctx.new_page(), name))
            except StopRun:
                pass
            finally:
                ctx.close()
        browser.close()
    for k, v in figures.items():
        print(f"figure: {k}: {v}")
    print(f"screenshots: {SHOTS}")
    print(f"{len(passed)} passed, {len(failed)} failed")
    return 0 if passed and not failed else 1


if __name__ == "__main__":
    sys.exit(main())
