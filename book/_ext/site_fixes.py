"""Small Sphinx fixes for the book's website, loaded from _config.yml (local_extensions).

1. Alt text for notebook figures. A figure drawn by a code cell has no alt text of its
   own, so Sphinx would use the image's file name. By the book's convention the markdown
   right before a figure describes it (see the style guide), so that paragraph becomes
   the alt text. A cell that sets its own (cell metadata `mystnb: {image: {alt: ...}}`)
   keeps it.

2. Duplicate scripts. sphinx-thebe (always loaded by Jupyter Book) adds its inline
   configuration script (`const THEBE_JS_URL = ...`) to every page twice with this Sphinx
   version (one copy has filename None, the other "", so Sphinx does not see them as
   equal); the second copy throws "Identifier 'THEBE_JS_URL' has already been declared"
   in the browser console, which the browser test (tests/test_browser.py) fails on. Exact
   duplicates of a script are dropped from each page before it is written.

3. Language switch. The English site is built into _build/html and the Chinese edition
   (book root zh/, same page names) into _build/html/zh. Every page of either gets a link
   to the same page in the other language at the top of its article; the config value
   `jaxbook_language` ("en" or "zh", set in each edition's _config.yml) says which side
   this build is.
"""

import re

from docutils import nodes

ALT_TEXT_LIMIT = 500


def _describing_paragraph(image):
    """The nearest paragraph before the code cell that holds this image, or None."""
    cell = image.parent
    while cell is not None and "cell" not in cell.get("classes", []):
        cell = cell.parent
    if cell is None or cell.parent is None:
        return None
    siblings = cell.parent.children
    for node in reversed(siblings[: siblings.index(cell)]):
        if isinstance(node, nodes.paragraph):
            return node
        if isinstance(node, nodes.container) and "cell" in node.get("classes", []):
            continue  # a code cell between the text and the figure
        return None
    return None


def _shorten(text):
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= ALT_TEXT_LIMIT:
        return text
    cut = text.rfind(". ", 0, ALT_TEXT_LIMIT)
    return text[: cut + 1] if cut > 0 else text[:ALT_TEXT_LIMIT].rstrip() + "..."


def _alt_text_for_figures(app, doctree, docname):
    for image in doctree.findall(nodes.image):
        if image.get("alt"):
            continue
        paragraph = _describing_paragraph(image)
        if paragraph is not None:
            image["alt"] = _shorten(paragraph.astext())
        else:
            title = next(iter(doctree.findall(nodes.title)), None)
            image["alt"] = "Figure" + (f" in {title.astext()}" if title is not None else "")


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen = set()
    unique = []
    for script in scripts:
        attributes = getattr(script, "attributes", {}) or {}
        # Inline scripts come with filename None or "" depending on who added them,
        # which is why Sphinx itself does not see the two copies as equal.
        filename = str(getattr(script, "filename", script) or "")
        key = (filename, tuple(sorted((name, str(value)) for name, value in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


LANGUAGE_SWITCH = (
    '<p class="language-switch"><a href="{href}" hreflang="{code}" lang="{code}">{label}</a></p>\n'
)


def _add_language_switch(app, pagename, templatename, context, doctree):
    if doctree is None or "body" not in context:  # search page, index: no article
        return
    up = "../" * pagename.count("/")
    if app.config.jaxbook_language == "zh":
        href, code, label = f"../{up}{pagename}.html", "en", "English"
    else:
        href, code, label = f"{up}zh/{pagename}.html", "zh-Hans", "中文"
    context["body"] = LANGUAGE_SWITCH.format(href=href, code=code, label=label) + context["body"]


KAGGLE_WELCOME = "https://www.kaggle.com/kernels/welcome?src="
COLAB_GITHUB = re.compile(r"https://colab\.research\.google\.com/github/(.+)")


def _add_kaggle_button(app, pagename, templatename, context, doctree):
    """An "open in Kaggle" entry beside the theme's Colab button, for the same notebook.

    The theme builds the Colab link from the one repository setting in _config.yml; the Kaggle
    link is derived from it (Kaggle imports a notebook from its GitHub URL), so the two never
    point at different files. Kaggle offers a free TPU v5e-8 (chapter 11).
    """
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in list(group.get("buttons", [])):
            match = COLAB_GITHUB.fullmatch(str(button.get("url", "")))
            if button.get("text") != "Colab" or not match:
                continue
            group["buttons"].append({
                "type": "link",
                "text": "Kaggle",
                "tooltip": str(button.get("tooltip", "Colab")).replace("Colab", "Kaggle"),
                "icon": "fab fa-kaggle",
                "url": KAGGLE_WELCOME + "https://github.com/" + match.group(1),
            })
            return


def setup(app):
    app.add_config_value("jaxbook_language", "en", "html")
    app.connect("html-page-context", _add_language_switch)
    # After the theme's launch buttons (priority 501), before they are rendered.
    app.connect("html-page-context", _add_kaggle_button, priority=502)
    # Run after the other extensions have added their per-page scripts.
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    app.connect("doctree-resolved", _alt_text_for_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
