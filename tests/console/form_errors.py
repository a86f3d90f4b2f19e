"""Errors said for people (issue 30, console item 1), a step of the console
test: a refusal of the server becomes a short sentence in the console's
language next to the field it concerns; that field is marked invalid,
described by the sentence and focused; the sentence is announced
(role="alert"); the server's own words are behind "Details"; typing in the
field clears it. Run after "connect TikTok" (a schedule form needs a
connected platform) and before "profile" (which changes the password)."""

import datetime as dt
import re

from playwright.sync_api import expect

from harness import SITE
from helpers import nav, open_menu, schedule_first_clip


def field_error(page, label, text):
    """The alert under the control labelled `label`: it says `text`, the
    control is invalid, described by it and focused."""
    control = page.get_by_label(label, exact=True)
    expect(control).to_have_attribute("aria-invalid", "true")
    expect(control).to_be_focused()
    described = control.get_attribute("aria-describedby").split()[-1]
    alert = page.locator(f'[id="{described}"]')
    expect(alert).to_have_attribute("role", "alert")
    expect(alert).to_contain_text(text)
    return control, alert


def form_errors(run, password):
    page = run.page

    # Profile: a wrong current password, a new one too short (the request
    # parser's refusal, "minLength(8)", only behind Details), in English
    # and in Portuguese; typing clears the error.
    nav(page, "Profile")
    page.get_by_label("Current password").fill("not the password")
    page.get_by_label("New password").fill("long enough password")
    page.get_by_role("button", name="Change password").click()
    field_error(page, "Current password", "The current password is not right.")
    page.get_by_label("Current password").fill(password)
    page.get_by_label("New password").fill("short")
    page.get_by_role("button", name="Change password").click()
    control, alert = field_error(page, "New password", "Use at least 8 characters.")
    # The parser's words only behind the (closed) Details toggle.
    expect(alert.locator("p")).to_have_text("Use at least 8 characters.")
    expect(alert.locator("code")).to_be_hidden()
    alert.get_by_text("Details").click()
    expect(alert.locator("code")).to_contain_text("minLength(8)")
    run.page_check("profile-field-error")
    control.press_sequentially("x")
    expect(page.get_by_role("alert")).to_have_count(0)
    expect(control).not_to_have_attribute("aria-invalid", "true")
    open_menu(page)
    page.get_by_label("Language").select_option("pt")
    page.get_by_label("Senha atual").fill(password)
    page.get_by_label("Nova senha").fill("curta")
    page.get_by_role("button", name="Alterar senha").click()
    field_error(page, "Nova senha", "Use pelo menos 8 caracteres.")
    run.shot("profile-field-error-pt")
    open_menu(page)
    page.get_by_label("Idioma").select_option("en")
    expect(page.get_by_role("heading", name="Profile", level=1)).to_be_visible()

    # An avatar that is not an image: about images, not video formats.
    page.get_by_label("Upload avatar").set_input_files(
        files=[{"name": "notes.txt", "mimeType": "text/plain", "buffer": b"not an image"}])
    expect(page.get_by_role("alert")).to_contain_text("Use a PNG, JPEG or WebP image.")
    expect(page.get_by_role("alert")).not_to_contain_text("MP4")

    # A post in the past: said by the date field, not as "scheduledAt: ...".
    form = schedule_first_clip(page, "Too late", dt.datetime.now() - dt.timedelta(days=1))
    _, alert = field_error(form, "Date and time", "Choose a time in the future.")
    expect(alert.locator("p")).to_have_text("Choose a time in the future.")
    run.page_check("schedule-field-error")
    form.get_by_role("button", name="Close").click()

    # A link that is no video: said under the link, never a traceback.
    nav(page, "Projects")
    page.get_by_role("button", name="New project").click()
    page.get_by_label("From a link").check()
    page.get_by_label("Video link").fill(SITE + "/missing.html")
    page.get_by_role("button", name="Preview").click()
    alert = page.get_by_role("alert")
    expect(alert).to_be_visible(timeout=60_000)
    text = alert.locator("p").inner_text()
    assert "Traceback" not in alert.inner_text(), alert.inner_text()
    assert re.search(r"cannot be used|did not answer", text), text
    run.page_check("link-error")
