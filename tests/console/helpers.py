"""Helpers of the console test (test_console.py): the phone menu, the main
navigation, a request with an API key, a local webhook receiver and its
signature check, and the calendar's day names."""

import hashlib
import hmac
import http.server
import json
import re
import threading
import urllib.error
import urllib.request

from playwright.sync_api import expect

from harness import BASE


def open_menu(page):
    """On a phone the navigation, the language and sign-out fold behind the
    Menu button: opens it (nothing to do on a wide screen)."""
    toggle = page.get_by_role("button", name=re.compile(r"^Menu"))
    if toggle.is_visible() and toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
        expect(toggle).to_have_attribute("aria-expanded", "true")


def nav(page, name):
    """Follows a link of the main navigation."""
    open_menu(page)
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name, exact=True).click()


def schedule_first_clip(page, title, when):
    """Fills the first project's first clip's schedule form (TikTok,
    `title`, `when` a local datetime), saves it and returns the form."""
    nav(page, "Projects")
    page.locator(".project-card a").first.click()
    clip = page.get_by_role("article").first
    clip.get_by_role("button", name="Schedule").click()
    form = clip.get_by_role("form")
    form.get_by_label("Platform").select_option("tiktok")
    form.get_by_label("Post title").fill(title)
    form.get_by_label("Date and time").fill(when.strftime("%Y-%m-%dT%H:%M"))
    form.get_by_role("button", name="Save").click()
    return form


def with_key(key, method, path, body=None):
    """The status of `method path` sent with the API key only."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method,
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


class Hooks(http.server.BaseHTTPRequestHandler):
    """A webhook receiver on 127.0.0.1: keeps every request it gets."""
    got = []

    def do_POST(self):  # noqa: N802 - the standard library's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        Hooks.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def start_hooks():
    """Starts the receiver; its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hooks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/hook"


def signed_by(secret, header, body):
    """Whether `Clipforge-Signature` is `body` signed with `secret` (what a
    receiver does, as docs/guide.md shows)."""
    parts = dict(p.split("=", 1) for p in header.split(","))
    mac = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, parts["v1"])


def day_label(d):
    """A day as the console's English calendar names it."""
    return f"{d:%A}, {d:%B} {d.day}, {d.year}"
