"""Headless Chromium driven by Selenium, for the page's browser test and its screenshot.

Chromium and its driver are Debian's packages (`apt-get install chromium chromium-driver`; `make
test` installs them when they are missing): Selenium is given both programs, so it downloads
nothing. Selenium is a test dependency (`pip install -e '.[test]'`): the page's test and
`python -m bench.serve --screenshot` import this.
"""

import shutil
from contextlib import contextmanager
from typing import Iterator, List

PROGRAMS = ("chromium", "chromedriver")
TRANSLATION_TIMEOUT_S = 60


def missing_programs() -> List[str]:
    return [program for program in PROGRAMS if shutil.which(program) is None]


@contextmanager
def headless_chromium(width: int = 1100, height: int = 800) -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    # --no-sandbox: Chromium's sandbox refuses to run as root, as in containers and CI
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()


def type_and_wait_for_translation(driver, url: str, sentence: str) -> None:
    """Open the page, type the sentence (no Enter: the page translates as one types) and wait until
    its translation is shown."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(url)
    WebDriverWait(driver, TRANSLATION_TIMEOUT_S).until(
        lambda _: "loading" not in driver.find_element(By.ID, "model").text
    )
    driver.find_element(By.ID, "source").send_keys(sentence)
    WebDriverWait(driver, TRANSLATION_TIMEOUT_S).until(
        lambda _: driver.find_elements(By.CSS_SELECTOR, "#hypotheses li .translation")
    )
