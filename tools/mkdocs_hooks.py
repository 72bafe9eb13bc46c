"""mkdocs hooks (mkdocs.yml `hooks:`): the pages the site makes rather than keeps.

* The home page is the repository's README.md, its links made relative to docs/.
* The reference pages are generated from the code at every build (tools/docsgen.py).
* A page may link to a file of the repository outside docs/ (`../deploy/helm/dra-migrate/values.yaml`,
  as the page reads on a forge): such a link is kept as its text and the path, or made a link to the
  repository when mkdocs.yml names one (`repo_url`). A link to a file that exists nowhere is left for
  mkdocs to report, which `mkdocs build --strict` turns into a failure.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[1]
README = "README.md"
INDEX = "index.md"
# [text](target "title"): the inline links the pages use (no nested brackets in link texts)
_LINK = re.compile(r"\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)")
_FENCE = re.compile(r"^(```|~~~)")

sys.path.insert(0, str(ROOT))  # tools.docsgen and the checkout's dra_migrate, whoever runs mkdocs

from tools import docsgen  # noqa: E402


def on_files(files: Files, config: MkDocsConfig) -> Files:
    readme = (ROOT / README).read_text(encoding="utf-8")
    if files.get_file_from_path(INDEX) is None:
        files.append(File.generated(config, INDEX, content=readme))
    for path, text in docsgen.generate().items():
        files.append(File.generated(config, path, content=text))
    return files


def _source_directory(page: Page, config: MkDocsConfig) -> Path:
    """Where the page's Markdown sits in the repository: its links are relative to that."""
    if page.file.src_uri == INDEX and page.file.generated_by:
        return ROOT
    return (Path(config.docs_dir) / page.file.src_uri).parent


def _rewrite(match: re.Match[str], source: Path, page_dir: Path, docs: Path, repo_url: str | None) -> str:
    target = match["target"]
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path or target.startswith("/"):
        return match[0]  # a URL, an anchor on the page, or an absolute path (mkdocs judges those)
    resolved = (source / parts.path).resolve()
    anchor = f"#{parts.fragment}" if parts.fragment else ""
    if resolved == ROOT / README:
        resolved = docs / INDEX
    if resolved.is_relative_to(docs):
        relative = PurePosixPath(Path(_relpath(resolved, page_dir)))
        return f"[{match['text']}]({relative}{anchor}{match['title'] or ''})"
    if not resolved.exists() or not resolved.is_relative_to(ROOT):
        return match[0]  # broken: mkdocs reports it
    in_repository = resolved.relative_to(ROOT).as_posix()
    if repo_url:
        return f"[{match['text']}]({repo_url.rstrip('/')}/blob/HEAD/{in_repository}{anchor})"
    text = match["text"]
    return text if in_repository in text else f"{text} (`{in_repository}`)"


def _relpath(path: Path, start: Path) -> str:
    import os.path

    return os.path.relpath(path, start).replace(os.sep, "/")


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files, **_: Any) -> str:
    source = _source_directory(page, config)
    docs = Path(config.docs_dir).resolve()
    page_dir = (docs / page.file.src_uri).parent
    out, fenced = [], False
    for line in markdown.splitlines(keepends=True):
        if _FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            line = _LINK.sub(lambda m: _rewrite(m, source, page_dir, docs, config.repo_url), line)
        out.append(line)
    return "".join(out)
