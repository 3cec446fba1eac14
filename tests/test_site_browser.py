"""The site as a person sees it, in a real headless Chromium (Debian's, driven by selenium
and chromedriver): the red cells are the failed verdicts, a filter hides the other
families, an image's link opens its page and says what moved since the build before, and no
request leaves file://. Screenshots go to
$IMGKIT_ARTIFACTS/site when that is set (CI keeps them), else to the test's folder."""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from imgkit.site.grid import rows
from imgkit.site.inputs import read_verdicts
from imgkit.site.pages import write_site

from .helpers.site import FAMILIES, plan_of, three_builds, verdicts

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
if not (CHROMIUM and DRIVER) and not os.environ.get("CI"):
    pytest.skip("chromium and chromium-driver are not installed (.ci/setup-test-tools.sh "
                "installs them)", allow_module_level=True)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1400,1000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    # Chromium's temporary folders (its shared memory, with --disable-dev-shm-usage) in the
    # test's, not /tmp: it leaves one behind each run
    scratch = {**os.environ, "TMPDIR": str(tmp_path_factory.mktemp("chromium"))}
    driver = webdriver.Chrome(service=Service(str(DRIVER), env=scratch), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    found, skipped = read_verdicts(verdicts(tmp_path / "v"))
    write_site(tmp_path / "site", rows(plan_of(), found), verdicts=len(found), skipped=skipped)
    return tmp_path / "site"


def shots(tmp_path: Path) -> Path:
    folder = Path(os.environ["IMGKIT_ARTIFACTS"]) / "site" if os.environ.get("IMGKIT_ARTIFACTS") else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def requested(browser: Any) -> list[str]:
    """Every URL the page asked for since the last call (Chromium's network log)."""
    urls = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def test_the_grid_as_a_person_sees_it(browser: Any, site: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    browser.get((site / "index.html").as_uri())
    browser.save_screenshot(str(shots(tmp_path) / "grid.png"))
    red = browser.find_elements(By.CSS_SELECTOR, "#grid td.failed")
    assert len(red) == 1 and "failed: gemm.bf16" in red[0].text
    assert red[0].value_of_css_property("background-color") == "rgba(248, 215, 215, 1)"
    shown = [r for r in browser.find_elements(By.CSS_SELECTOR, "#grid tbody tr") if r.is_displayed()]
    assert len(shown) == len(FAMILIES)
    chart = browser.find_element(By.CSS_SELECTOR, "#throughput svg")     # drawn, and seen
    assert chart.is_displayed() and chart.size["height"] > 100 and chart.size["width"] > 400
    bars = browser.find_elements(By.CSS_SELECTOR, "#throughput svg .rect.reactive")
    assert len(bars) == 4, len(bars)              # two GPU-measured images, TF32 and FP16 each

    Select(browser.find_element(By.ID, "family")).select_by_visible_text("jax")
    shown = [r for r in browser.find_elements(By.CSS_SELECTOR, "#grid tbody tr") if r.is_displayed()]
    assert [r.find_element(By.TAG_NAME, "a").text for r in shown] == ["jax:0.4-cuda12.4"]
    browser.save_screenshot(str(shots(tmp_path) / "grid-filtered.png"))
    Select(browser.find_element(By.ID, "family")).select_by_visible_text("all")

    browser.find_element(By.LINK_TEXT, "torch:2.5.1-cuda12.4").click()
    assert browser.title == "torch:2.5.1-cuda12.4"
    assert "failed: gemm.bf16" in browser.find_element(By.TAG_NAME, "body").text
    moved = {tuple(cell.text for cell in row.find_elements(By.TAG_NAME, "td"))
             for row in browser.find_elements(By.CSS_SELECTOR, "table.changes tbody tr")}
    assert ("pip", "numpy", "1.26.4", "2.0.1") in moved               # the diff names what moved
    assert ("throughput", "GEMM BF16 of peak", "71%", "10%") in moved
    browser.save_screenshot(str(shots(tmp_path) / "image.png"))
    urls = requested(browser)
    assert urls and all(u.startswith("file://") for u in urls), urls     # nothing left the page


def test_two_verdicts_chosen_by_hand_are_compared(browser: Any, tmp_path: Path) -> None:
    """Three builds of torch: choosing the oldest and the newest shows what moved between
    them and the size delta, whichever way round they are chosen; the same one twice says so."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    found, _ = read_verdicts(three_builds(tmp_path / "v"))
    write_site(tmp_path / "site", rows(plan_of(), found), verdicts=len(found), skipped=[])
    browser.get((tmp_path / "site" / "images" / "torch_2.5.1-cuda12.4.html").as_uri())

    def shown() -> set[tuple[str, ...]]:
        divs = [d for d in browser.find_elements(By.CSS_SELECTOR, "div.comparison") if d.is_displayed()]
        assert len(divs) <= 1
        return {tuple(cell.text for cell in row.find_elements(By.TAG_NAME, "td"))
                for d in divs for row in d.find_elements(By.CSS_SELECTOR, "tbody tr")}

    side = {name: Select(browser.find_element(By.CSS_SELECTOR, f'select[data-side="{name}"]'))
            for name in ("from", "to")}
    assert ("pip", "numpy", "1.26.4", "2.0.1") in shown()         # at first: the newest two
    side["from"].select_by_index(2)
    oldest_to_newest = shown()
    assert ("pip", "numpy", "1.25.0", "2.0.1") in oldest_to_newest
    assert ("size", "image, unpacked", "6.4 GB", "6.6 GB (+220.0 MB)") in oldest_to_newest
    browser.save_screenshot(str(shots(tmp_path) / "compare.png"))
    side["from"].select_by_index(0)
    side["to"].select_by_index(2)
    assert shown() == oldest_to_newest                            # older first, either way
    side["to"].select_by_index(0)
    assert shown() == set() and browser.find_element(By.CSS_SELECTOR, "p.same").is_displayed()
    urls = requested(browser)
    assert urls and all(u.startswith("file://") for u in urls), urls
