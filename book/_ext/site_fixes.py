"""Small Sphinx fixes for the book's website, loaded from _config.yml (local_extensions).

sphinx-thebe (always loaded by Jupyter Book) adds its inline configuration script
(`const THEBE_JS_URL = ...`) to every page twice with this Sphinx version; the second copy
throws "Identifier 'THEBE_JS_URL' has already been declared" in the browser console
(one copy has filename None, the other "", so Sphinx does not see them as equal).
The browser test (tests/test_browser.py) fails on console errors, so drop exact duplicates
of a script from each page before it is written.
"""


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


def setup(app):
    # Run after the other extensions have added their per-page scripts.
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
