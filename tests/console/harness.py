"""What test_console.py's steps stand on: the environment tests/console.rs
passes, one run per browser context (screenshots, axe-core), checks that
print one line each, keyboard helpers, and the routes that put the test's
Stripe and the console's public address in front of the browser."""

import os
import re
import time
import traceback

BASE = os.environ["CLIPFORGE_URL"].rstrip("/")
PUBLIC = os.environ["CONSOLE_PUBLIC"].rstrip("/")
STRIPE = os.environ["STRIPE_BASE"].rstrip("/")
SITE = os.environ["CONSOLE_SITE"].rstrip("/")
VIDEO = os.environ["CONSOLE_VIDEO"]
AVATAR = os.environ["CONSOLE_AVATAR"]
UPLOAD_LIMIT_MB = int(os.environ["CONSOLE_UPLOAD_LIMIT_MB"])
SHOTS = os.environ["CONSOLE_SCREENSHOTS"]
AXE_JS = os.environ["AXE_JS"]

passed, failed, figures = [], [], {}


class StopRun(Exception):
    pass


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


# The focused element as "TAG:accessible name" (aria-label, label, or text).
FOCUSED = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return "";
  const label = e.getAttribute("aria-label") || (e.labels && e.labels.length ? e.labels[0].innerText : "")
    || e.innerText || "";
  return e.tagName + ":" + label.trim().replace(/\\s+/g, " ");
}"""


def focused(page):
    return page.evaluate(FOCUSED)


def tab_to(page, want, limit=80):
    """Presses Tab until the focused element starts with `want` ("TAG:name")."""
    seen = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        got = focused(page)
        if got.startswith(want):
            return
        seen.append(got)
    raise AssertionError(f"Tab never reached {want!r}; focus went through {seen}")


def route_outside(ctx):
    """The browser's view of the outside world: the console's public address
    (Stripe's success and return URLs) is the local server, and Stripe's
    hosted checkout and portal are the local Stripe's pages."""
    def public(route):
        route.fulfill(status=302, headers={"location": BASE + route.request.url[len(PUBLIC):]})

    def stripe(route):
        path = re.sub(r"^https://[a-z]+\.stripe\.com", "", route.request.url)
        route.fulfill(response=route.fetch(url=STRIPE + path, max_redirects=0))

    ctx.route(PUBLIC + "/**", public)
    ctx.route(re.compile(r"^https://(checkout|billing)\.stripe\.com/"), stripe)
