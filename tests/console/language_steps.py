"""Plural forms, a step of the console test: counts through the
language's plural rules (Intl.PluralRules) in English and Portuguese."""

import re

from playwright.sync_api import expect

from helpers import nav, open_menu


def plurals(run):
    page = run.page
    # Counts through the language's plural rules: "1 clip" / "1 corte",
    # "3 clips" / "3 cortes" — whatever the finished project's count.
    nav(page, "Projects")
    meta = page.locator(".project-card .meta", has_text=re.compile(r"\d+ clips?\b")).first
    n = int(re.search(r"(\d+) clips?\b", meta.inner_text()).group(1))
    print(f"     the finished project's card counts {n} clip(s)")
    expect(meta).to_contain_text(f"{n} clip" if n == 1 else f"{n} clips")
    if n == 1:
        expect(meta).not_to_contain_text("1 clips")
    open_menu(page)
    page.get_by_label("Language").select_option("pt")
    cards = page.locator(".project-card .meta", has_text=re.compile(r"\d+ cortes?\b")).first
    expect(cards).to_contain_text(f"{n} corte" if n <= 1 else f"{n} cortes")
    if n <= 1:
        expect(cards).not_to_contain_text(f"{n} cortes")
    page.get_by_label("Idioma").select_option("en")
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()
