"""The web console in a real browser (Debian's chromium through Playwright).

Run by tests/console.rs, which starts the server, the platform emulator, the
local Stripe and a site for yt-dlp, and passes their addresses (see
harness.py). Prints one line per check and closes with "N passed, M failed".
"""

import datetime as dt
import os
import re
import sys
import time

from playwright.sync_api import expect, sync_playwright

from harness import (AVATAR, BASE, SHOTS, SITE, UPLOAD_LIMIT_MB, VIDEO, Run, StopRun, check, failed,
                     figures, focused, passed, route_outside, tab_to)
from form_errors import form_errors
from language_steps import plurals
from plans_steps import credits_and_plans
from helpers import Hooks, day_label, nav, open_menu, schedule_first_clip, signed_by, start_hooks, with_key

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PROCESSING_TIMEOUT_MS = 900_000
PASSWORD, NEW_PASSWORD = "correct horse battery", "correct horse battery staple"


def main_path(run: Run):
    page = run.page
    bulk = {}

    def sign_up():
        # From the keyboard only: Tab to each control, type, Enter.
        page.goto(BASE + "/")
        expect(page).to_have_url(re.compile(r"/sign-in"))
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        run.page_check("sign-in")
        tab_to(page, "A:Sign up")
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Create your Clipforge account")).to_be_visible()
        tab_to(page, "INPUT:Name")
        page.keyboard.type("Ana Example")
        for text in (run.email, PASSWORD):
            page.keyboard.press("Tab")
            page.keyboard.type(text)
        run.page_check("sign-up")
        assert focused(page).startswith("INPUT:Password"), focused(page)
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()

    def dashboard():
        # Time to first render: a fresh load of the dashboard until the
        # project list (here: its empty state) and the credits are shown.
        page.goto(BASE + "/")
        page.get_by_text("No projects yet").wait_for()
        ms = page.evaluate("performance.now()")
        figures.setdefault(f"dashboard first render, {run.name} (ms)", []).append(round(ms))
        expect(page.get_by_test_id("credits-left")).to_contain_text("60 of 60 credits left")
        run.page_check("dashboard-empty")
        if run.name == "phone":
            # One row of header: the navigation waits behind Menu.
            height = page.locator("header.top").bounding_box()["height"]
            figures.setdefault("phone header height, menu closed (px)", []).append(round(height))
            assert height < 80, f"the phone header is {height} px tall"
            expect(page.get_by_role("navigation", name="Main")).to_be_hidden()
        # Portuguese through the switch, then back.
        open_menu(page)
        page.get_by_label("Language").select_option("pt")
        expect(page.get_by_role("heading", name="Projetos")).to_be_visible()
        expect(page.get_by_role("button", name="Novo projeto")).to_be_visible()
        run.shot("dashboard-pt")
        page.get_by_label("Idioma").select_option("en")
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()

    def link_preview_and_402():
        # From the keyboard: New project, the link mode, the /meta preview of
        # a two-hour video, and the server's 402 said plainly.
        tab_to(page, "BUTTON:New project")
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="New project")).to_be_visible()
        tab_to(page, "INPUT:From a file")
        page.keyboard.press("ArrowRight")
        expect(page.get_by_label("From a link")).to_be_checked()
        tab_to(page, "INPUT:Video link")
        page.keyboard.type(SITE + "/long.html")
        tab_to(page, "BUTTON:Preview")
        page.keyboard.press("Enter")
        preview = page.locator(".meta-preview")
        expect(preview).to_contain_text("Keynote replay")
        expect(preview).to_contain_text("Duration: 2:00:00")
        tab_to(page, "BUTTON:Create project")
        page.keyboard.press("Enter")
        expect(page.get_by_role("alert")).to_contain_text("Not enough credits: this video needs 120 and you have 60.")
        run.page_check("new-project-402")

    def link_project_and_cancel():
        page.get_by_label("Video link").fill(SITE + "/talk.html")
        page.get_by_role("button", name="Preview").click()
        preview = page.locator(".meta-preview")
        expect(preview).to_contain_text("Launch talk")
        expect(preview).to_contain_text("Duration: 0:25")
        page.wait_for_function("() => document.querySelector('.meta-preview img')?.naturalWidth > 0")
        run.page_check("new-project-link")
        page.get_by_role("button", name="Create project").click()
        expect(page).to_have_url(re.compile(r"/projects/[0-9a-f-]{36}$"))
        page.get_by_role("button", name="Cancel processing").click()  # the confirm() is accepted
        expect(page.get_by_text("Processing was cancelled")).to_be_visible()
        run.page_check("project-cancelled")
        page.get_by_role("link", name="Back to projects").click()
        # The reservation went back.
        expect(page.get_by_test_id("credits-left")).to_contain_text("60 of 60 credits left")

    def upload_and_create():
        page.get_by_role("button", name="New project").click()
        file_input = page.get_by_label("Video file")
        # A file that is not a video: the server's 415, said plainly.
        file_input.set_input_files({"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not a video"})
        expect(page.get_by_role("alert")).to_contain_text("file type is not supported")
        # Over the plan's upload limit: the server's 413, said plainly.
        big = bytes((UPLOAD_LIMIT_MB + 1) * 1024 * 1024)
        file_input.set_input_files({"name": "big.mp4", "mimeType": "video/mp4", "buffer": big})
        expect(page.get_by_role("alert")).to_contain_text("larger than your plan allows")
        run.page_check("new-project-413")
        # The real video, chosen from the keyboard (Space opens the file chooser).
        page.get_by_role("heading", name="New project").click()
        tab_to(page, "INPUT:Video file")
        with page.expect_file_chooser() as chooser:
            page.keyboard.press("Space")
        chooser.value.set_files(VIDEO)
        expect(page.get_by_text("Uploaded:")).to_be_visible(timeout=60_000)
        # What it will cost, before creating it (the test video is < 1 min).
        expect(page.get_by_test_id("project-cost")).to_have_text(
            "Creating this project costs 1 credit (one per started minute of video).")
        run.page_check("new-project")
        page.get_by_label("Clip length").select_option("15-30")
        # Steering and framing: a prompt, and every layout and shape offered.
        page.get_by_label("What should the clips be about?").fill("the main idea")
        expect(page.get_by_label("Framing").locator("option")).to_have_count(6)
        page.get_by_label("Framing").select_option("auto")
        expect(page.get_by_label("Aspect ratio").locator("option")).to_have_count(4)
        # Filler removal is offered (left off here: this project's clips are
        # checked against the plain transcript below).
        fillers = page.get_by_label("Cut filler words (um, uh, “you know”) out of the clips")
        expect(fillers).not_to_be_checked()
        fillers.check()
        expect(fillers).to_be_checked()
        fillers.uncheck()
        tab_to(page, "BUTTON:Create project")
        page.keyboard.press("Enter")
        expect(page).to_have_url(re.compile(r"/projects/[0-9a-f-]{36}$"))

    def progress_to_done():
        status = page.get_by_test_id("project-status")
        seen_progress, seen_left = False, ""
        deadline = time.time() + PROCESSING_TIMEOUT_MS / 1000
        while time.time() < deadline:
            state = status.get_attribute("data-state")
            if state in ("completed", "cancelled"):
                break
            if state == "failed":
                raise AssertionError("the project failed: " + page.inner_text("main"))
            if not seen_progress and page.get_by_role("progressbar", name="Transcribe").count():
                seen_progress = True
                expect(page.get_by_text("a notification comes when the clips are ready")).to_be_visible()
                run.page_check("project-progress")
            # The time left, from the rate this page measured (a stage must
            # move 2 points over 3 s first).
            left = page.locator(".progress-note", has_text=re.compile(r"left$"))
            if not seen_left and left.count():
                seen_left = left.first.inner_text()
            page.wait_for_timeout(250)
        assert status.get_attribute("data-state") == "completed", "processing did not finish"
        expect(status).to_have_text("Completed")
        assert seen_progress, "no live per-stage progress was shown"
        assert seen_left, "no time left was shown while the project ran"
        figures.setdefault("time left first shown", []).append(seen_left)
        expect(page.get_by_role("article").first).to_be_visible()

    def play_clip():
        clip = page.get_by_role("article").first
        # Why it was picked: the reason and its sub-scores, with the prompt's.
        expect(clip.get_by_text(re.compile(r"^Why this clip:"))).to_be_visible()
        expect(clip.get_by_role("list", name="Scores").get_by_text("matches your prompt")).to_be_visible()
        expect(clip.get_by_text(re.compile(r"^Framing: "))).to_be_visible()
        # The reason in Portuguese, built from the sub-scores and the prompt
        # words the server's sentence quotes.
        open_menu(page)
        page.get_by_label("Language").select_option("pt")
        reason = clip.locator(".reason p")
        expect(reason).to_contain_text(re.compile(r"^Por que este corte: .*(seu pedido|ideia completa|gancho|ritmo|enfático|nada se destaca).*\.$"))
        expect(reason).not_to_contain_text(re.compile(r"tells|opens|keeps|prompt"))
        open_menu(page)
        page.get_by_label("Idioma").select_option("en")
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

    def rename_clip():
        # A fragment of a title is fixed in place; it stays after a reload.
        clip = page.get_by_role("article").first
        clip.get_by_role("button", name=re.compile(r"^Rename: ")).click()
        form = clip.get_by_role("form", name="Rename")
        form.get_by_label("Clip title").fill("Open with a question")
        run.page_check("clip-rename")
        form.get_by_role("button", name="Save").click()
        expect(clip.get_by_role("heading", name="Open with a question")).to_be_visible()
        expect(form).to_have_count(0)
        page.reload()
        expect(page.get_by_role("heading", name="Open with a question")).to_be_visible()

    def download_srt():
        clip = page.get_by_role("article").first
        with page.expect_download() as d:
            clip.get_by_role("link", name="Download SRT").click()
        text = open(d.value.path(), encoding="utf-8").read()
        assert re.search(r"^1\s*$", text, re.M) and "-->" in text, f"not an SRT file: {text[:200]!r}"
        clip.get_by_text("Transcript").click()
        expect(clip.locator(".transcript li").first).to_be_visible()
        run.page_check("project-clips")
        # The editor exports: an EDL that names the clip, and the ZIP.
        with page.expect_download() as d:
            page.get_by_role("link", name="EDL (CMX3600)").click()
        edl = open(d.value.path(), encoding="utf-8").read()
        assert edl.startswith("TITLE:") and "FCM: NON-DROP FRAME" in edl, f"not an EDL: {edl[:200]!r}"
        with page.expect_download() as d:
            page.get_by_role("link", name="All files (ZIP)").click()
        assert open(d.value.path(), "rb").read(2) == b"PK", "not a ZIP"

    def edit_clip():
        # The editor: a word fixed (drawn live over the player before any
        # render), the start nudged (button, timeline handle by keyboard),
        # the end dragged on the timeline, the first shot framed by hand,
        # saved and rendered as version 2, which plays; then version 1
        # restored (as version 3).
        clip = page.get_by_role("article").first
        clip.get_by_role("link", name=re.compile(r"^Edit: ")).click()
        expect(page.get_by_role("heading", name=re.compile(r"^Edit “"))).to_be_visible()
        video = page.locator(".editor-player video")
        page.wait_for_function("v => v.readyState >= 1", arg=video.element_handle(), timeout=30_000)
        words = page.get_by_role("group", name="Caption words").get_by_role("button")
        expect(words.nth(2)).to_be_visible()
        words.nth(1).click()
        expect(words.nth(1)).to_have_attribute("aria-pressed", "true")
        page.get_by_label(re.compile(r"^Text of the word at")).fill("Makers")
        expect(page.get_by_test_id("caption-overlay")).to_contain_text("Makers")
        page.get_by_role("button", name="Start 0.1 s later").click()
        # The timeline: the start handle moved by the keyboard, the end
        # one dragged (each shows in the typed fields).
        start_field = page.get_by_label("Start (s)", exact=True)
        end_field = page.get_by_label("End (s)", exact=True)
        first = float(start_field.input_value())
        page.get_by_test_id("handle-start").focus()
        page.keyboard.press("ArrowRight")
        expect(start_field).to_have_value(f"{first + 0.1:.2f}")
        end_before = end_field.input_value()
        bar = page.get_by_test_id("handle-end").locator("rect").last.bounding_box()
        page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
        page.mouse.down()
        page.mouse.move(bar["x"] - 15, bar["y"] + bar["height"] / 2, steps=4)
        page.mouse.up()
        expect(end_field).not_to_have_value(end_before)
        # Framing by hand: the first shot held at a position.
        shot = page.get_by_test_id("shot-0")
        shot.get_by_label("Hold at a position").check()
        shot.get_by_label("Crop centre (source pixels)").fill("100")
        run.page_check("clip-editor")
        page.get_by_role("button", name="Save and render").click()
        expect(page.get_by_role("button", name="Restore version 1")).to_be_visible(timeout=600_000)
        expect(page.locator(".meta").first).to_contain_text("Version 2")
        # The fixed word is in the new version (the later start may have
        # left a word before it out, so it is found by its text).
        expect(page.get_by_role("group", name="Caption words").get_by_role("button", name="Makers")).to_be_visible()
        expect(page.get_by_text(re.compile(r"span\(s\) of this version are framed by hand"))).to_be_visible()
        video = page.locator(".editor-player video")
        video.evaluate("v => { v.muted = true; return v.play(); }")
        page.wait_for_function(
            "v => v.readyState >= 2 && v.currentTime > 0.3", arg=video.element_handle(), timeout=30_000)
        video.evaluate("v => v.pause()")
        page.get_by_role("button", name="Restore version 1").click()
        expect(page.get_by_role("button", name="Restore version 2")).to_be_visible()
        expect(page.locator(".meta").first).to_contain_text("Version 3")
        page.get_by_role("link", name="Back to projects").click()
        expect(page.get_by_role("article").first).to_be_visible()

    def template():
        nav(page, "Caption templates")
        expect(page.get_by_role("heading", name="Caption templates")).to_be_visible()
        page.get_by_role("button", name="New template").click()
        editor = page.get_by_role("form", name="New template")
        editor.get_by_label("Name", exact=True).fill("Loud yellow")
        editor.get_by_label("Animation").select_option("bounce")
        preview = editor.get_by_role("figure", name="Live preview")
        expect(preview).to_be_visible()
        # Keyword emphasis: on by default ("TikTok" in the highlight colour);
        # off, only the spoken word is.
        expect(preview.locator(".emphasis", has_text="TikTok")).to_be_visible()
        editor.get_by_label("Highlight keywords (numbers, names, rare words)").uncheck()
        expect(preview.locator(".emphasis")).to_have_count(0)
        expect(preview.locator(".current")).to_have_count(1)
        # The preview stays in view while the last control is reached.
        last = editor.locator("input[type=range]").last
        last.scroll_into_view_if_needed()
        box, height = preview.bounding_box(), page.viewport_size["height"]
        assert box["y"] >= -1 and box["y"] + box["height"] <= height + 1, f"preview at {box}, viewport {height}"
        run.page_check("template-editor")
        editor.get_by_role("button", name="Save").click()
        expect(page.get_by_role("heading", name="Loud yellow")).to_be_visible()
        run.page_check("templates")
        # Deleting asks first, naming the template (the run's dialog
        # handler answers yes).
        with page.expect_event("dialog") as asked:
            page.get_by_role("button", name="Delete: Loud yellow").click()
        assert "Loud yellow" in asked.value.message, asked.value.message
        expect(page.get_by_role("heading", name="Loud yellow")).to_have_count(0)

    def api_keys():
        # A key is made here, shown once, works as a bearer within its
        # scopes, and stops working when revoked.
        nav(page, "Developers")
        expect(page.get_by_role("heading", name="Developers")).to_be_visible()
        form = page.get_by_role("form", name="New API key")
        form.get_by_label("Name").fill("Nightly import")
        expect(form.get_by_label("Read")).to_be_checked()
        expect(form.get_by_label("Publish (connections, scheduling)")).not_to_be_checked()
        form.get_by_role("button", name="Create key").click()
        shown = page.get_by_test_id("new-key")
        expect(shown).to_have_value(re.compile(r"^cf_"))
        key = shown.input_value()
        run.page_check("developers")
        # As a program would: the key alone, no browser cookies.
        assert with_key(key, "GET", "/api/projects") == 200
        assert with_key(key, "POST", "/api/keys", {"name": "x", "scopes": ["read"]}) == 403
        page.get_by_role("button", name="Done").click()
        expect(shown).to_have_count(0)
        row = page.get_by_role("row", name=re.compile("Nightly import"))
        expect(row).to_contain_text(key[:11])
        assert key not in page.content(), "the key is still on the page"
        with page.expect_event("dialog") as asked:
            row.get_by_role("button", name="Revoke Nightly import").click()
        assert "Nightly import" in asked.value.message, asked.value.message
        expect(page.get_by_text("No API keys yet.")).to_be_visible()
        assert with_key(key, "GET", "/api/projects") == 401

    def webhooks():
        # A webhook added here gets a test event signed with the secret
        # shown once; the log shows it delivered; deleting asks first.
        url = start_hooks()
        form = page.get_by_role("form", name="New webhook")
        form.get_by_label("URL").fill(url)
        expect(form.get_by_label("Project completed")).to_be_checked()
        form.get_by_label("Post failed").check()
        form.get_by_role("button", name="Add webhook").click()
        shown = page.get_by_test_id("webhook-secret")
        expect(shown).to_have_value(re.compile(r"^whsec_"))
        secret = shown.input_value()
        hook = page.get_by_role("group", name=url)
        expect(hook).to_contain_text("Working")
        seen = len(Hooks.got)
        hook.get_by_role("button", name="Send test").click()
        log = hook.get_by_role("region", name="Delivery log")
        expect(log.get_by_role("row", name=re.compile("Test"))).to_contain_text("Delivered (200)", timeout=15_000)
        headers, body = Hooks.got[seen]
        assert headers["clipforge-event"] == "webhook.test", headers
        assert signed_by(secret, headers["clipforge-signature"], body), headers
        run.page_check("developers-webhooks")
        page.get_by_role("button", name="Done").click()
        assert secret not in page.content(), "the secret is still on the page"
        with page.expect_event("dialog") as asked:
            hook.get_by_role("button", name=f"Delete {url}").click()
        assert url in asked.value.message, asked.value.message
        expect(page.get_by_text("No webhooks yet.")).to_be_visible()

    def connect():
        nav(page, "Integrations")
        page.get_by_role("button", name="Connect TikTok").click()
        # Emulator consent page → callback → back to the console.
        expect(page).to_have_url(re.compile(r"/integrations\?connected=tiktok"))
        expect(page.get_by_text("TikTok is connected.")).to_be_visible()
        expect(page.get_by_role("button", name="Disconnect TikTok")).to_be_visible()
        run.page_check("integrations")

    def schedule():
        # The next whole minute at least 15 s away (the field has minutes).
        when = (dt.datetime.now() + dt.timedelta(seconds=75)).replace(second=0, microsecond=0)
        form = schedule_first_clip(page, "First post from the console", when)
        expect(form.get_by_text("Scheduled")).to_be_visible()
        # A second post at the same time, whose first try the platform
        # emulator refuses (a title starting "Refused once").
        page.reload()
        clip = page.get_by_role("article").first
        clip.get_by_role("button", name="Schedule").click()
        form = clip.get_by_role("form")
        form.get_by_label("Platform").select_option("tiktok")
        form.get_by_label("Post title").fill(f"Refused once ({run.name})")
        form.get_by_label("Date and time").fill(when.strftime("%Y-%m-%dT%H:%M"))
        form.get_by_role("button", name="Save").click()
        expect(form.get_by_text("Scheduled")).to_be_visible()
        nav(page, "Schedule")
        expect(page.locator("li.post", has_text="First post from the console")).to_be_visible()
        run.page_check("schedule-pending")

    def bulk_schedule():
        # Every clip, an hour apart, from 10:00 two days from now.
        nav(page, "Projects")
        page.locator(".project-card a").first.click()
        expect(page.get_by_role("article").first).to_be_visible()
        clips = page.get_by_role("article").count()
        page.get_by_role("button", name="Schedule all clips").click()
        form = page.get_by_role("form", name="Schedule all clips")
        form.get_by_label("TikTok").check()
        day = dt.date.today() + dt.timedelta(days=2)
        form.get_by_label("Date and time").fill(f"{day:%Y-%m-%d}T10:00")
        form.get_by_label("Hours between posts").fill("1")
        form.get_by_role("button", name="Save").click()
        expect(form.get_by_role("status")).to_contain_text(f"Scheduled: {clips}")
        run.page_check("project-bulk-schedule")
        bulk.update(day=day, count=clips)

    def calendar_edit_delete():
        nav(page, "Schedule")
        day, count = bulk["day"], bulk["count"]
        label = day_label(day)
        if run.name == "desktop":
            # The month grid from the keyboard: today's cell is the one tab
            # stop; two ArrowRight presses reach the bulk posts' day.
            expect(page.get_by_role("grid")).to_be_visible()
            tab_to(page, "BUTTON:" + day_label(dt.date.today()))
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowRight")
            posts_text = "1 post" if count == 1 else f"{count} posts"
            assert focused(page).startswith(f"BUTTON:{label}: {posts_text}"), focused(page)
            expect(page.locator("#day-h")).to_have_text(label)
            posts = page.locator("section.day li.post")
            run.page_check("schedule-month")
        else:
            # Phones get the week agenda; the posts' day may be next week.
            expect(page.locator(".agenda")).to_be_visible()  # the posts are loaded
            expect(page.get_by_role("grid")).to_have_count(0)
            day_item = page.locator(".agenda > li", has=page.get_by_role("heading", name=label, exact=True))
            if day_item.count() == 0:
                page.get_by_role("button", name="Next week").click()
            posts = day_item.locator("li.post")
            run.page_check("schedule-week")
        expect(posts).to_have_count(count)
        # Edit the first one: a new title, half an hour later.
        first = posts.first
        first.get_by_role("button", name=re.compile(r"^Edit: ")).click()
        form = first.get_by_role("form")
        form.get_by_label("Post title").fill("Moved in the calendar")
        form.get_by_label("Date and time").fill(f"{day:%Y-%m-%d}T10:30")
        form.get_by_role("button", name="Save").click()
        edited = posts.filter(has_text="Moved in the calendar")
        expect(edited).to_have_count(1)
        expect(edited.locator("time")).to_have_text("10:30 AM")
        run.page_check("schedule-edited")
        # Delete it (the confirm() is accepted).
        edited.get_by_role("button", name=re.compile(r"^Delete: ")).click()
        expect(posts).to_have_count(count - 1)
        expect(posts.filter(has_text="Moved in the calendar")).to_have_count(0)

    def profile():
        nav(page, "Profile")
        page.get_by_label("Name").fill("Ana Renamed")
        page.get_by_role("button", name="Save").click()
        expect(page.get_by_text("Saved.")).to_be_visible()
        page.get_by_label("Upload avatar").set_input_files(AVATAR)
        page.wait_for_function("() => document.querySelector('img.avatar')?.naturalWidth > 0")
        open_menu(page)
        expect(page.get_by_role("navigation", name="Main").locator("img.avatar-sm")).to_be_visible()
        page.get_by_label("Current password").fill(PASSWORD)
        page.get_by_label("New password").fill(NEW_PASSWORD)
        page.get_by_role("button", name="Change password").click()
        expect(page.get_by_label("Current password")).to_have_value("")
        expect(page.get_by_role("status")).to_have_text("Saved.")
        run.page_check("profile")

    def published():
        nav(page, "Schedule")
        page.get_by_role("button", name="Today").click()
        post = page.locator("li.post", has_text="First post from the console")
        expect(post).to_have_attribute("data-status", "published", timeout=240_000)
        expect(post.get_by_text("Published")).to_be_visible()
        run.page_check("schedule-published")
        # The refused post says why, and is tried again from here.
        refused = page.locator("li.post", has_text=f"Refused once ({run.name})")
        expect(refused).to_have_attribute("data-status", "failed", timeout=240_000)
        expect(refused.get_by_text(re.compile(r"^Why it failed: .*403"))).to_be_visible()
        run.page_check("schedule-failed")
        refused.get_by_role("button", name=re.compile(r"^Try again now")).click()
        expect(refused).to_have_attribute("data-status", re.compile("pending|publishing|published"))
        expect(refused).to_have_attribute("data-status", "published", timeout=240_000)

    def notification():
        open_menu(page)
        page.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile(r"^Notifications")).click()
        expect(page.locator("[data-type=project_completed]").first).to_be_visible()
        unread_before = int(re.search(r"(\d+) unread", page.get_by_role("status").inner_text()).group(1))
        assert unread_before >= 1, "no unread notification"
        run.page_check("notifications")
        page.get_by_role("button", name=re.compile(r"^Mark as read")).first.click()
        expect(page.get_by_role("status")).to_have_text(f"{unread_before - 1} unread")
        # Worded in Portuguese from the type and params, not the server's
        # English: the project's, the plan's and the posts' notifications.
        open_menu(page)
        page.get_by_label("Language").select_option("pt")
        done = page.locator("[data-type=project_completed]").first
        expect(done).to_contain_text("Projeto concluído")
        expect(done).to_contain_text(re.compile(r"está pronto: \d+ cortes? gerados?\."))
        expect(page.locator("[data-type=plan_changed]").first).to_contain_text("Agora você está no plano")
        expect(page.locator("[data-type=post_published]").first).to_contain_text("foi publicado no TikTok")
        expect(page.locator("main")).not_to_contain_text("is ready")
        run.shot("notifications-pt")
        open_menu(page)
        page.get_by_label("Idioma").select_option("en")

    def sign_out_and_in():
        open_menu(page)
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("button", name="Sign in")).to_be_visible()
        page.goto(BASE + "/credits")
        expect(page).to_have_url(re.compile(r"/sign-in"))
        # The old password no longer works; the new one does (keyboard only).
        tab_to(page, "INPUT:Email")
        page.keyboard.type(run.email)
        page.keyboard.press("Tab")
        page.keyboard.type(PASSWORD)
        page.keyboard.press("Enter")
        expect(page.get_by_role("alert")).to_be_visible()
        page.keyboard.press("Control+A")
        page.keyboard.type(NEW_PASSWORD)
        page.keyboard.press("Enter")
        expect(page.get_by_role("heading", name="Credits and plans")).to_be_visible()

    steps = [("sign up (keyboard)", sign_up), ("dashboard", dashboard),
             ("link preview and 402 (keyboard)", link_preview_and_402),
             ("link project, cancel", link_project_and_cancel),
             ("415, 413, upload and create (keyboard)", upload_and_create),
             ("live progress to done", progress_to_done), ("play a clip", play_clip),
             ("rename a clip", rename_clip),
             ("download SRT", download_srt), ("edit a clip: fix a word, trim, render, restore", edit_clip),
             ("template", template), ("API keys", api_keys), ("webhooks", webhooks),
             ("plural forms (en, pt)", lambda: plurals(run)), ("connect TikTok", connect),
             ("errors said for people, by their field (en, pt)", lambda: form_errors(run, PASSWORD)),
             ("schedule a clip", schedule), ("schedule all clips", bulk_schedule),
             ("calendar: edit and delete a pending post", calendar_edit_delete),
             ("credits, checkout, portal, plan selection", lambda: credits_and_plans(run)),
             ("profile, avatar, password", profile),
             ("post published; a refused post tried again", published),
             ("read a notification", notification), ("sign out, sign in with the new password", sign_out_and_in)]
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
            expect.set_options(timeout=30_000)
            route_outside(ctx)
            page = ctx.new_page()
            page.on("dialog", lambda d: d.accept())
            try:
                main_path(Run(page, name))
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
