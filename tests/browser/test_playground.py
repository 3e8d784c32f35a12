"""The playground page (GET /playground) used as a person would, in headless Chromium: a streamed chat and
its chain, a background run cancelled from the page, a stream resumed after a reload, and the list filter.
Each step's screenshot is kept (conftest.py: ARTIFACTS)."""

from __future__ import annotations

import httpx
import redis.asyncio as aioredis
from playwright.async_api import Page, Request, expect

from ..support import Stack, tenant_of
from .conftest import Shots

#: echo-slow says a word every 50 ms (tests/support.py: TEST_CONFIG): 80 words take four seconds
LONG = " ".join(f"word{n}" for n in range(80))


async def send(page: Page, text: str, *, background: bool = False, user: str = "") -> None:
    await page.fill("#prompt", text)
    await page.fill("#label-user", user)
    await page.set_checked("#background", background)
    await page.click("#send")


#: the last answer of the conversation shown
ANSWER = "[data-testid=msg-model] >> nth=-1"


def test_landing_page_and_the_playground_files(playground: Stack) -> None:
    landing = httpx.get(playground.url + "/")
    assert landing.status_code == 200
    assert 'href="/playground"' in landing.text and 'href="/docs"' in landing.text
    page = httpx.get(playground.url + "/playground")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe" not in policy
    script = httpx.get(playground.url + "/playground/app.js")
    assert script.headers["content-type"].startswith("text/javascript")
    # only the files of its table: nothing else of the package, however named
    for name in ("index.html", "..%2Fapi%2Fplayground.py", "..%2F..%2Fpyproject.toml", "nope.js"):
        assert httpx.get(f"{playground.url}/playground/{name}").status_code == 404, name


async def test_chat_streams_the_answer_and_continues_the_chain(
    page: Page, shots: Shots, http: httpx.AsyncClient
) -> None:
    streamed: list[str] = []
    page.on("response", lambda r: streamed.append(r.headers.get("content-type", "")))
    await send(page, "Hello there playground", user="alice")
    await expect(page.locator(ANSWER)).to_contain_text("Hello there playground")
    await expect(page.locator("[data-testid=chain-item]")).to_have_count(1)
    await shots.take(page, "first-turn")
    assert any(kind.startswith("text/event-stream") for kind in streamed)

    await send(page, "And once more")
    await expect(page.locator(ANSWER)).to_contain_text("And once more")
    chain = page.locator("[data-testid=chain-item]")
    await expect(chain).to_have_count(2)
    await expect(chain.locator("[data-testid=status]")).to_have_text(["completed", "completed"])
    await shots.take(page, "second-turn")

    newest, oldest = [await each.get_attribute("data-id") for each in await chain.all()]
    assert newest and oldest
    assert (await http.get(f"/interactions/{newest}")).json()["previous_interaction_id"] == oldest
    assert (await http.get(f"/interactions/{oldest}")).json()["labels"] == {"user": "alice"}


async def test_background_run_cancelled_from_the_page(
    page: Page, shots: Shots, http: httpx.AsyncClient, playground: Stack, api_key: str
) -> None:
    await page.select_option("#model", "echo-slow")
    await send(page, LONG, background=True)
    answer = page.locator(ANSWER)
    # watched live: words arrive while it runs
    await expect(answer).to_contain_text("word3")
    await expect(page.locator("#run-status")).to_have_attribute("data-status", "in_progress")
    await shots.take(page, "streaming")

    await page.click("#cancel")
    await expect(page.locator("#run-status")).to_have_attribute("data-status", "cancelled")
    await expect(page.locator("[data-testid=chain-item] [data-testid=status]")).to_have_text(["cancelled"])
    await shots.take(page, "cancelled")

    shown = (await answer.locator(".text").text_content() or "").strip()
    assert shown and LONG.startswith(shown) and shown != LONG
    interaction_id = await answer.get_attribute("data-id")
    stored = (await http.get(f"/interactions/{interaction_id}")).json()
    assert stored["status"] == "cancelled"
    assert stored["steps"][-1]["content"][0]["text"].strip() == shown
    key = f"ix:{{{tenant_of(api_key)}}}:{interaction_id}"
    client = aioredis.Redis.from_url(playground.redis_url)
    try:
        assert await client.hget(key, "status") == b"cancelled"
    finally:
        await client.aclose()


async def test_a_stream_resumes_after_a_reload(page: Page, shots: Shots) -> None:
    resumed: list[str] = []

    def seen(request: Request) -> None:
        if "last_event_id=" in request.url:
            resumed.append(request.url)

    page.on("request", seen)
    await page.select_option("#model", "echo-slow")
    await send(page, LONG, background=True)
    await expect(page.locator(ANSWER)).to_contain_text("word10")
    await shots.take(page, "before-reload")

    await page.reload()
    await expect(page.locator("#run-status")).to_have_attribute("data-status", "completed")
    await shots.take(page, "after-reload")
    # every word once, in order: what was shown before the reload and the rest streamed after it
    text = await page.locator(ANSWER).locator(".text").text_content()
    assert text == LONG
    assert resumed, "the reloaded page resumed with last_event_id"


async def test_the_list_filters_by_label(page: Page, shots: Shots, http: httpx.AsyncClient) -> None:
    await send(page, "first from alice", user="alice")
    await expect(page.locator("[data-testid=chain-item]")).to_have_count(1)
    await send(page, "second from alice", user="alice")
    await expect(page.locator("[data-testid=chain-item]")).to_have_count(2)
    for text in ("bob asks", "bob again"):
        body = {"model": "echo", "input": text, "labels": {"user": "bob"}}
        created = await http.post("/interactions", json=body)
        assert created.status_code == 200, created.text

    await page.click("#list-search")
    rows = page.locator("[data-testid=list-item]")
    await expect(rows).to_have_count(4)
    await page.fill("#filter-label", "user=alice")
    await page.click("#list-search")
    await expect(rows).to_have_count(2)
    await shots.take(page, "filtered")
    for row in await rows.all():
        await expect(row).to_contain_text("user=alice")

    await page.check("#filter-roots")
    await page.click("#list-search")
    await expect(rows).to_have_count(1)
    await shots.take(page, "roots-only")
    await expect(page.locator("#error")).to_be_hidden()


async def test_the_list_pages_and_opens_a_conversation(
    page: Page, shots: Shots, http: httpx.AsyncClient
) -> None:
    await send(page, "the first turn")
    await expect(page.locator("[data-testid=chain-item]")).to_have_count(1)
    await send(page, "the second turn")
    await expect(page.locator("[data-testid=chain-item]")).to_have_count(2)
    for n in range(5):
        created = await http.post("/interactions", json={"model": "echo", "input": f"alone {n}"})
        assert created.status_code == 200, created.text
    await page.click("#new-chat")
    await expect(page.locator("[data-testid=chain-item]")).to_have_count(0)

    await page.select_option("#page-size", "5")
    await page.click("#list-search")
    rows = page.locator("[data-testid=list-item]")
    await expect(rows).to_have_count(5)
    await page.click("#list-more")
    await expect(rows).to_have_count(7)
    await expect(page.locator("#list-more")).to_be_hidden()
    # newest first: the conversation's turns are the last two
    await rows.nth(5).locator("a").click()
    messages = page.locator("#conversation .msg .text")
    await expect(messages).to_have_text(["the first turn"] * 2 + ["the second turn"] * 2)
    await expect(page.locator("[data-testid=chain-item]")).to_have_count(2)
    await shots.take(page, "opened")


async def test_errors_of_the_api_are_shown(page: Page, shots: Shots, http: httpx.AsyncClient) -> None:
    await send(page, "soon gone")
    await expect(page.locator("[data-testid=chain-item]")).to_have_count(1)
    gone = await page.locator(ANSWER).get_attribute("data-id")
    assert (await http.delete(f"/interactions/{gone}")).status_code == 200

    await send(page, "continue a deleted one")
    await expect(page.locator("#error")).to_be_visible()
    await expect(page.locator("#error-text")).to_contain_text("404 NOT_FOUND")
    # the refused turn is back in the prompt, not left as an empty answer
    await expect(page.locator("#prompt")).to_have_value("continue a deleted one")
    await expect(page.locator("[data-testid=msg-model]")).to_have_count(1)
    await shots.take(page, "error")
