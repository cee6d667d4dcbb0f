"""The page in a real browser (headless Chromium): it translates as one types, draws the soft
alignment with one cell per (source word, target word), and highlights aligned words on hover."""

import re

import pytest

from bench.browser import (
    headless_chromium,
    missing_programs,
    type_and_wait_for_translation,
)

from ...support.png import assert_png

SENTENCE = "the dog opens a quiet new big cat"
ASSETS = re.compile(r'(?:src|href)="([^"]+)"')


@pytest.fixture(scope="module")
def browser():
    missing = missing_programs()
    if missing:  # `make test` installs them; this is where it could not (no apt-get, not root)
        pytest.skip(
            f"{' and '.join(missing)} not found: install Debian's chromium and chromium-driver"
        )
    with headless_chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def translated_page(browser, server):
    type_and_wait_for_translation(browser, server.url + "/", SENTENCE)
    return browser


def _texts(driver, selector):
    from selenium.webdriver.common.by import By

    return [element.text for element in driver.find_elements(By.CSS_SELECTOR, selector)]


def _hover(driver, selector, index):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    ActionChains(driver).move_to_element(
        driver.find_elements(By.CSS_SELECTOR, selector)[index]
    ).perform()


def test_the_page_shows_the_translation_the_api_gives(translated_page, server):
    (translation,) = server.translate({"text": SENTENCE})
    assert _texts(translated_page, "#hypotheses .translation") == [
        translation["hypotheses"][0]["translation"]
    ]


def test_the_heatmap_has_one_cell_per_source_word_and_target_word(translated_page, server):
    (translation,) = server.translate({"text": SENTENCE})
    source_words, target_words = (
        translation["source_words"],
        translation["hypotheses"][0]["target_words"],
    )
    assert _texts(translated_page, "#heatmap th.source-word") == source_words
    assert _texts(translated_page, "#heatmap th.target-word") == target_words
    assert len(_texts(translated_page, "#heatmap td.cell")) == len(source_words) * len(target_words)


def test_hovering_a_target_word_highlights_the_source_word_it_attends_to_most(
    translated_page, server
):
    (translation,) = server.translate({"text": SENTENCE})
    alignment = translation["hypotheses"][0]["alignment"]
    row = 1
    most = max(range(len(alignment[row])), key=alignment[row].__getitem__)
    _hover(translated_page, "#heatmap th.target-word", row)
    assert _texts(translated_page, "#heatmap th.target-word.active") == [
        translation["hypotheses"][0]["target_words"][row]
    ]
    assert translation["source_words"][most] in _texts(
        translated_page, "#heatmap th.source-word.aligned"
    )


def test_hovering_a_source_word_highlights_the_target_words_attending_to_it(
    translated_page, server
):
    (translation,) = server.translate({"text": SENTENCE})
    hypothesis = translation["hypotheses"][0]
    row = 1
    most = max(
        range(len(hypothesis["alignment"][row])), key=hypothesis["alignment"][row].__getitem__
    )
    _hover(translated_page, "#heatmap th.source-word", most)
    assert _texts(translated_page, "#heatmap th.source-word.active") == [
        translation["source_words"][most]
    ]
    assert hypothesis["target_words"][row] in _texts(
        translated_page, "#heatmap th.target-word.aligned"
    )


def test_a_screenshot_of_the_page_is_a_png(translated_page, tmp_path):
    translated_page.save_screenshot(str(tmp_path / "page.png"))
    assert_png(tmp_path / "page.png")


def test_the_page_says_an_rnnencdec_model_has_no_alignment(browser, encdec_server):
    type_and_wait_for_translation(browser, encdec_server.url + "/", "the dog sees a cat")
    (notice,) = _texts(browser, "#no-alignment")
    assert "rnnencdec_50 has no alignment" in notice
    assert _texts(browser, "#heatmap td.cell") == []


def test_every_asset_of_the_page_is_served_by_the_server_itself(server):
    """No CDN: the page works offline."""
    assets = ASSETS.findall(server.get("/").text)
    assert assets and all(asset.startswith("/static/") for asset in assets)
    for asset in assets:
        assert server.get(asset).status_code == 200
