"""Credits and plans, a step of the console test: the ledger's project
links, each plan's price (from the local Stripe) and facts per billing
period and in Portuguese, checkout paid and back, the customer portal and
back, a move to Free kept until the period's end and withdrawn."""

import re

from playwright.sync_api import expect

from harness import BASE
from helpers import nav, open_menu


def credits_and_plans(run):
    page = run.page
    nav(page, "Credits and plans")
    expect(page.get_by_role("heading", name="Credit history")).to_be_visible()
    expect(page.get_by_role("cell", name="charge").first).to_be_visible()
    # Each line names its project, a link to it.
    expect(page.locator("table a[href^='/projects/']").first).to_be_visible()
    # A ledger wider than the phone says so until it is scrolled to its end.
    cue = page.get_by_test_id("scroll-cue")
    if run.name == "phone":
        expect(cue).to_be_visible()
        page.locator(".table-wrap").evaluate("e => { e.scrollLeft = e.scrollWidth; }")
        expect(cue).to_have_count(0)
    else:
        expect(cue).to_have_count(0)
    expect(page.locator(".plan.current h3")).to_have_text("Free")
    # Each plan's price (from the local Stripe) and what it gives (the
    # server's plan table), per billing period and in Portuguese.
    expect(page.get_by_test_id("price-creator")).to_have_text("$19.00 a month")
    expect(page.get_by_test_id("facts-creator")).to_contain_text("300 credits a month")
    expect(page.get_by_test_id("facts-free")).to_contain_text("Watermark on every clip")
    expect(page.get_by_test_id("price-enterprise")).to_have_text("Priced with sales")
    page.get_by_label("Yearly").check()
    expect(page.get_by_test_id("price-pro")).to_have_text("$490.00 a year")
    page.get_by_label("Monthly").check()
    open_menu(page)
    page.get_by_label("Language").select_option("pt")
    expect(page.get_by_test_id("price-creator")).to_contain_text("por mês")
    expect(page.get_by_test_id("facts-creator")).to_contain_text("300 créditos por mês")
    expect(page.get_by_role("cell", name="Cobrança").first).to_be_visible()
    open_menu(page)
    page.get_by_label("Idioma").select_option("en")
    run.page_check("credits")
    # Creator is not bought yet: Stripe's checkout, paid, back here.
    page.get_by_role("button", name="Choose Creator").click()
    expect(page).to_have_url(re.compile(r"^https://checkout\.stripe\.com/c/pay/cs_"))
    expect(page.get_by_role("heading", name="Subscribe to Clipforge creator (monthly)")).to_be_visible()
    run.shot("stripe-checkout")
    page.get_by_role("button", name="Pay").click()
    expect(page).to_have_url(BASE + "/credits")
    expect(page.get_by_text("Payment received: your Creator plan is active.")).to_be_visible()
    expect(page.locator(".plan.current h3")).to_have_text("Creator")
    run.page_check("credits-creator")
    # The customer portal, and back.
    page.get_by_role("button", name="Manage subscription").click()
    expect(page).to_have_url(re.compile(r"^https://billing\.stripe\.com/p/session/"))
    page.get_by_role("link", name="Return to Clipforge").click()
    expect(page).to_have_url(BASE + "/credits")
    # Free with a live subscription: Creator stays until the period ends
    # (Stripe cancels it then); keeping Creator withdraws that.
    page.get_by_role("button", name="Choose Free").click()
    expect(page.get_by_text(re.compile(r"^Your Creator plan stays until .+; then it becomes Free\.$"))).to_be_visible()
    expect(page.locator(".plan.current h3")).to_have_text("Creator")
    expect(page.locator(".plan.current").get_by_text(re.compile(r"^Ends on "))).to_be_visible()
    run.page_check("credits-ending")
    page.get_by_role("button", name="Keep Creator").click()
    expect(page.get_by_text("Your Creator plan renews as before.")).to_be_visible()
    expect(page.get_by_role("button", name="Keep Creator")).to_have_count(0)
    expect(page.get_by_role("button", name="Choose Free")).to_be_visible()
    expect(page).to_have_url(BASE + "/credits")
