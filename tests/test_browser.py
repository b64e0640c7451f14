"""The website as a reader meets it: every page opened in a real, headless Chromium.

The site built by the `built_site` fixture (tests/conftest.py) is served from
_build/html on 127.0.0.1 and every page is opened in Debian's Chromium, driven by
Playwright with the system browser (no browser download). A page fails on:

- a JavaScript console error or an uncaught exception;
- any request that leaves 127.0.0.1 (the site must work offline: MathJax, fonts and
  scripts are all served by the site itself);
- a resource that answers with an HTTP error, an image that does not load or has no
  alt text (notebook figures get theirs from the paragraph before them, book/_ext);
- an internal link (href) whose target is missing, or whose #fragment is not on the
  target page;
- math that MathJax did not render.

Chapter pages (notebooks/*.html) must also have a Colab link and an "open in Kaggle" link
(Kaggle's free TPU v5e-8, chapter 11), both derived from the one repository setting in
_config.yml, a download link for their .ipynb, previous/next
navigation, copy buttons on code, and exercise solutions hidden behind a toggle.
Screenshots of the landing page and of one chapter go to _build/screenshots/.

The Chinese edition (_build/html/zh) gets the same checks, its Colab and Kaggle links open
zh/notebooks/..., every page of both editions links to its twin in the other language,
and a CJK font must be installed (dev/ensure_chromium.sh installs Noto CJK) so that the
screenshot of a Chinese chapter shows characters, not empty boxes.
"""

import functools
import http.server
import os
import re
import shutil
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from html import escape as html_escape
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, toc_files

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "_build" / "screenshots"
PAGE_TIMEOUT_MS = 30_000


def chromium_path() -> str | None:
    """Debian's Chromium (installed by dev/ensure_chromium.sh), never a downloaded one."""
    candidates = ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return candidate
    return None


def repository_setting() -> tuple[str, str, str]:
    """(owner, repo, branch) from the one repository setting in _config.yml."""
    repository = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)/?", repository["url"])
    assert match, f"repository.url in _config.yml is not a GitHub URL: {repository['url']}"
    return match.group(1), match.group(2), repository.get("branch", "main")


def colab_url(notebook_stem: str, edition: str = "") -> str:
    """The Colab link of a chapter; edition "zh/" for the Chinese notebook."""
    owner, repo, branch = repository_setting()
    return (f"https://colab.research.google.com/github/{owner}/{repo}/blob/{branch}"
            f"/{edition}notebooks/{notebook_stem}.ipynb")


def kaggle_url(notebook_stem: str, edition: str = "") -> str:
    """The "open in Kaggle" link of a chapter: Kaggle imports the notebook from GitHub."""
    owner, repo, branch = repository_setting()
    return ("https://www.kaggle.com/kernels/welcome?src="
            f"https://github.com/{owner}/{repo}/blob/{branch}/{edition}notebooks/{notebook_stem}.ipynb")


ZH_TOC = ROOT / "zh" / "_toc.yml"
# Every page a reader can reach: the TOC's pages plus Sphinx's own, in both editions.
TOC_PAGES = [f"{name}.html" for name in toc_files()]
ZH_TOC_PAGES = [f"zh/{name}.html" for name in toc_files(ZH_TOC)]
PAGES = (TOC_PAGES + ["genindex.html", "search.html"]
         + ZH_TOC_PAGES + ["zh/genindex.html", "zh/search.html"])


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 (the base class names it so)
        pass


@pytest.fixture(scope="module")
def site_url(built_site):
    """Serve _build/html on a free port of 127.0.0.1 for as long as the module runs."""
    result, _, html = built_site
    if not (html / "index.html").exists():
        pytest.fail("the site did not build:\n" + (result.stdout + result.stderr)[-3000:])
    handler = functools.partial(QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    executable = chromium_path()
    if executable is None:
        reason = "no Chromium: install Debian's chromium (dev/ensure_chromium.sh does)"
        if os.environ.get("CI"):
            pytest.fail(reason + "; in CI the browser test must run, not skip")
        pytest.skip(reason)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_FLAGS
        )
        yield chromium
        chromium.close()


class PageVisit:
    """One page opened in a fresh browser context, with everything that went wrong."""

    def __init__(self, browser, site_url: str, path: str):
        self.problems: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.route("**/*", functools.partial(self._only_local, site_url))
        self.page = self.context.new_page()
        self.page.set_default_timeout(PAGE_TIMEOUT_MS)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"uncaught error: {error}"))
        self.page.on("response", self._response)
        self.page.on("requestfailed", functools.partial(self._request_failed, site_url))
        self.response = self.page.goto(site_url + path, wait_until="load")
        if self.response is None or not self.response.ok:
            status = None if self.response is None else self.response.status
            self.problems.append(f"page answered HTTP {status}")
        self._wait_for_mathjax()
        self.page.wait_for_load_state("networkidle")

    def _only_local(self, site_url, route):
        if route.request.url.startswith(site_url):
            route.continue_()
        else:
            self.problems.append(f"request leaving the site (needs internet): {route.request.url}")
            route.abort()

    def _console(self, message):
        if message.type == "error":
            self.problems.append(f"console error: {message.text} at {message.location}")

    def _response(self, response):
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status} for {response.url}")

    def _request_failed(self, site_url, request):
        # Requests leaving the site are reported by _only_local; ERR_ABORTED is a request
        # the page itself cancelled (such as a prefetch when it navigates).
        if request.url.startswith(site_url) and "ERR_ABORTED" not in (request.failure or ""):
            self.problems.append(f"request failed ({request.failure}): {request.url}")

    def _wait_for_mathjax(self):
        """MathJax typesets after load; wait for it on pages that have math."""
        if self.page.evaluate("document.querySelectorAll('.math').length") == 0:
            return
        self.page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
            timeout=PAGE_TIMEOUT_MS,
        )
        self.page.evaluate("() => MathJax.startup.promise")

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, site_url):
    visits = []

    def open_page(path: str) -> PageVisit:
        page_visit = PageVisit(browser, site_url, path)
        visits.append(page_visit)
        return page_visit

    yield open_page
    for page_visit in visits:
        page_visit.close()


BROKEN_IMAGES_JS = """
async () => {
  const images = Array.from(document.images);
  for (const image of images) { if (image.loading === "lazy") image.loading = "eager"; }
  await Promise.all(images.map(image => image.complete ? null :
      new Promise(done => { image.onload = done; image.onerror = done; })));
  return images.filter(image => image.naturalWidth === 0)
               .map(image => image.getAttribute("src"));
}
"""

# An alt text that is empty or just the file name tells a screen reader nothing.
MISSING_ALT_JS = """
() => Array.from(document.images)
  .filter(image => !(image.getAttribute("alt") || "").trim()
                   || /\\.(png|jpe?g|svg|gif)$/i.test(image.getAttribute("alt").trim()))
  .map(image => image.getAttribute("src"))
"""

INTERNAL_LINKS_JS = """
(origin) => Array.from(document.querySelectorAll("a[href]"))
  .map(anchor => anchor.href)
  .filter(href => href.startsWith(origin))
"""


@functools.cache
def fetch_ids(url: str) -> tuple[int, frozenset[str]]:
    """HTTP status of a page of the local site and the element ids it defines."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read().decode("utf-8", errors="replace")
            status = response.status
    except urllib.error.HTTPError as error:
        return error.code, frozenset()
    ids = frozenset(re.findall(r'\sid="([^"]+)"', body)) if url.endswith(".html") else frozenset()
    return status, ids


def broken_internal_links(page, site_url: str) -> list[str]:
    broken = []
    for href in sorted(set(page.evaluate(INTERNAL_LINKS_JS, site_url))):
        target, _, fragment = href.partition("#")
        target = target.split("?")[0]
        if target.endswith("/"):
            target += "index.html"
        status, ids = fetch_ids(target)
        if status != 200:
            broken.append(f"{href} (HTTP {status})")
        elif fragment and target.endswith(".html"):
            if urllib.parse.unquote(fragment) not in ids:
                broken.append(f"{href} (no element with id {fragment!r})")
    return broken


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_cleanly(visit, site_url, path):
    page_visit = visit(path)
    page = page_visit.page
    problems = list(page_visit.problems)

    problems += [f"image does not load: {src}" for src in page.evaluate(BROKEN_IMAGES_JS)]
    problems += [f"image without alt text: {src}" for src in page.evaluate(MISSING_ALT_JS)]
    problems += [f"broken internal link: {link}" for link in broken_internal_links(page, site_url)]

    math_count = page.evaluate("document.querySelectorAll('.math').length")
    if math_count:
        unrendered = page.evaluate(
            "Array.from(document.querySelectorAll('.math'))"
            ".filter(m => !m.querySelector('mjx-container')).length"
        )
        if unrendered:
            problems.append(f"{unrendered} of {math_count} formulas not rendered by MathJax")
        if page.evaluate("document.querySelectorAll('mjx-merror').length"):
            problems.append("MathJax reports a TeX error")

    owner, repo, _ = repository_setting()
    repository_links = page.evaluate(
        "Array.from(document.querySelectorAll('a[href]')).map(a => a.href)"
    )
    if f"https://github.com/{owner}/{repo}" not in repository_links:
        problems.append("no repository link in the page header")

    if path in TOC_PAGES or path in ZH_TOC_PAGES:
        twin = path.removeprefix("zh/") if path.startswith("zh/") else "zh/" + path
        switch = page.locator("p.language-switch a")
        if switch.count() != 1:
            problems.append(f"{switch.count()} language switches (one expected)")
        elif switch.first.evaluate("a => a.href") != site_url + twin:
            problems.append(f"language switch goes to {switch.first.evaluate('a => a.href')}, "
                            f"not to {site_url + twin}")

    assert not problems, f"{path}:\n" + "\n".join(problems)


CHAPTER_PAGES = [f"{name}.html" for name in toc_files() if name.startswith("notebooks/")]
ZH_CHAPTER_PAGES = [f"zh/{page}" for page in CHAPTER_PAGES]


@pytest.mark.parametrize("path", CHAPTER_PAGES + ZH_CHAPTER_PAGES)
def test_chapter_page_has_reader_features(visit, path):
    page = visit(path).page
    stem = Path(path).stem
    hrefs = page.evaluate("Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    problems = []

    expected_colab = colab_url(stem, "zh/" if path.startswith("zh/") else "")
    if expected_colab not in hrefs:
        problems.append(f"no Colab link {expected_colab}")
    expected_kaggle = kaggle_url(stem, "zh/" if path.startswith("zh/") else "")
    if expected_kaggle not in hrefs:
        problems.append(f"no Kaggle link {expected_kaggle}")
    if not any(href.endswith(f"_sources/notebooks/{stem}.ipynb") for href in hrefs):
        problems.append("no download link for the .ipynb")
    if not page.locator(".prev-next-area a").count():
        problems.append("no previous/next navigation")
    code_blocks = page.locator("div.highlight pre").count()
    if code_blocks and page.locator("button.copybtn").count() < code_blocks:
        problems.append("code blocks without a copy button")
    solutions = page.locator(".tag_hide-input")
    for index, solution in enumerate(solutions.all()):
        if solution.locator(".cell_input").is_visible():
            problems.append(f"hide-input cell {index} shows its code without a toggle")
    if solutions.count():
        # A reader clicks the toggle of the first solution and sees its code.
        first = solutions.first
        first.locator("summary").first.click()
        if not first.locator(".cell_input").is_visible():
            problems.append("clicking a solution's toggle does not show its code")
    assert not problems, f"{path}:\n" + "\n".join(problems)


@pytest.mark.parametrize("edition", ["", "zh/"])
def test_root_redirects_to_the_landing_page(browser, site_url, edition):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(site_url + edition + "index.html")
        page.wait_for_url(f"**/{edition}book/intro.html", timeout=PAGE_TIMEOUT_MS)
        assert page.title().startswith("Hands-on JAX")
    finally:
        context.close()


@pytest.mark.parametrize("service, url", [("Colab", colab_url), ("Kaggle", kaggle_url)])
def test_every_built_chapter_has_colab_and_kaggle_links(built_site, service, url):
    """Every notebooks/*.html, in the TOC or not, links to its notebook in Colab and Kaggle."""
    _, _, html = built_site
    chapters = sorted((html / "notebooks").glob("*.html"))
    assert chapters, "no chapter pages were built"
    missing = [page.name for page in chapters
               if html_escape(url(page.stem)) not in page.read_text(encoding="utf-8")]
    assert not missing, f"chapter pages without a {service} link: {missing}"
    zh_chapters = sorted((html / "zh" / "notebooks").glob("*.html"))
    assert [page.name for page in zh_chapters] == [page.name for page in chapters]
    missing = [page.name for page in zh_chapters
               if html_escape(url(page.stem, "zh/")) not in page.read_text(encoding="utf-8")]
    assert not missing, f"Chinese chapter pages without a {service} link to zh/: {missing}"


def test_search_finds_pages(visit):
    page_visit = visit("search.html?q=jax")
    results = page_visit.page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=PAGE_TIMEOUT_MS)
    assert results.count() > 0
    assert not page_visit.problems, "\n".join(page_visit.problems)


def test_screenshots_of_landing_page_and_a_chapter(visit):
    """Saved for a person to look at; the CI log names them."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    landing = visit("book/intro.html").page
    landing.screenshot(path=str(SCREENSHOTS / "landing.png"), full_page=True)
    # The chapter with the most figures shows the most of what a chapter page offers.
    chapters = sorted(CHAPTER_PAGES, key=lambda p: (-_figure_count(p), p))
    chapter = visit(chapters[0]).page
    chapter.screenshot(path=str(SCREENSHOTS / "chapter.png"))
    chapter.screenshot(path=str(SCREENSHOTS / "chapter_full.png"), full_page=True)
    figures = chapter.locator(".cell_output img")
    if figures.count():
        figures.first.scroll_into_view_if_needed()
        chapter.screenshot(path=str(SCREENSHOTS / "chapter_figure.png"))
    print(f"screenshots in {SCREENSHOTS}: landing.png, chapter*.png ({chapters[0]})")
    assert (SCREENSHOTS / "landing.png").stat().st_size > 10_000


def test_chinese_pages_render_with_a_cjk_font(visit):
    """Chromium takes its fonts from fontconfig: without a CJK font, Chinese is boxes."""
    fonts = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True)
    assert fonts.stdout.strip(), (
        "no CJK font for Chromium (fc-list :lang=zh is empty): dev/ensure_chromium.sh "
        "installs Debian's fonts-noto-cjk"
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page_visit = visit("zh/notebooks/02_autodiff.html")
    page = page_visit.page
    assert page.evaluate("document.documentElement.lang").startswith("zh")
    heading = page.locator("h1").first.inner_text()
    assert re.search(r"[\u4e00-\u9fff]", heading), heading
    page.screenshot(path=str(SCREENSHOTS / "zh_chapter.png"))
    page.screenshot(path=str(SCREENSHOTS / "zh_chapter_full.png"), full_page=True)
    print(f"CJK fonts: {fonts.stdout.split(chr(10))[0]}; screenshot zh_chapter.png")
    assert not page_visit.problems, "\n".join(page_visit.problems)


def _figure_count(path: str) -> int:
    page = ROOT / "_build" / "html" / path
    return page.read_text(encoding="utf-8").count("<img") if page.exists() else 0
