"""mkdocs hook: docstrings cross-reference in Sphinx's style (:func:`load`, :meth:`dim`),
which Markdown renders as the role's name followed by code. Drop the role, keep the code."""

import re

_ROLE = re.compile(r":(?:func|meth|class|attr|mod|data|exc):(?=<code>)")


def on_page_content(html, **kwargs):
    return _ROLE.sub("", html)
