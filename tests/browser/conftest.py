"""The playground in a real browser: Debian's headless Chromium (never a downloaded one) driven by
Playwright, against one server started as `make run` starts it (a private Redis on a unix socket, the worker
in the web process).

`IX_CHROMIUM` names another browser binary; `IX_TEST_ARTIFACTS` the directory the screenshots of each step
go to (test-artifacts/browser/ by default, kept out of git)."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from ..support import ROOT, Stack, new_key, stacks_by_topology

CHROMIUM = os.environ.get("IX_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("IX_TEST_ARTIFACTS", ROOT / "test-artifacts" / "browser"))

# a streamed answer on a loaded machine (three test processes at once) can take seconds
expect.set_options(timeout=20_000)


@pytest.fixture(scope="package")
def playground(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with stacks_by_topology(tmp_path_factory, "browser", ["make-run"]) as started:
        yield started["make-run"]


@pytest.fixture(scope="package")
async def browser() -> AsyncIterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no browser at {CHROMIUM} (`make chromium` installs Debian's, IX_CHROMIUM names one)")
    # a root user's Chromium refuses to start with its sandbox on
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    async with async_playwright() as driver:
        launched = await driver.chromium.launch(executable_path=CHROMIUM, args=args)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
def api_key() -> str:
    return new_key()


@pytest.fixture
async def http(playground: Stack, api_key: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=f"{playground.url}/v1beta", headers={"x-goog-api-key": api_key}, timeout=30
    ) as client:
        yield client


@pytest.fixture
async def page(browser: Browser, playground: Stack, api_key: str) -> AsyncIterator[Page]:
    """The playground open in a fresh browser profile, the test's key entered and the models loaded."""
    context = await browser.new_context(base_url=playground.url, viewport={"width": 1280, "height": 900})
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    # the page works offline: it loads and calls nothing but its own server
    elsewhere: list[str] = []
    own = playground.url + "/"
    opened.on("request", lambda r: None if r.url.startswith(own) else elsewhere.append(r.url))
    try:
        await opened.goto("/playground")
        await opened.fill("#api-key", api_key)
        await opened.dispatch_event("#api-key", "change")
        await expect(opened.locator("#model option[value=echo]")).to_have_count(1)
        yield opened
        assert not errors, errors
        assert not elsewhere, elsewhere
    finally:
        await context.close()


class Shots:
    """Screenshots of a test's steps, numbered in order, kept as the test's artifacts."""

    def __init__(self, name: str) -> None:
        self.prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        self.count = 0

    async def take(self, page: Page, step: str) -> Path:
        self.count += 1
        path = ARTIFACTS / f"{self.prefix}-{self.count:02d}-{step}.png"
        await page.screenshot(path=path, full_page=True)
        return path


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Shots:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return Shots(request.node.name)
