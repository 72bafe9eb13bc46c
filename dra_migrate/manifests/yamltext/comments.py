"""Comment lines of a YAML document, to tell which ones a fallback rewrite could not keep."""

from __future__ import annotations

from collections import Counter


def _comment(line: str) -> str | None:
    """The `# ...` part of a line, outside quotes; None when the line has none."""
    quote: str | None = None
    previous = " "
    for index, char in enumerate(line):
        if quote is not None:
            if char == quote:
                quote = None
        elif char in "'\"" and previous in " \t[{,:-":
            quote = char
        elif char == "#" and previous in " \t":
            return line[index:].rstrip()
        previous = char
    return None


def comments(text: str) -> list[tuple[int, str]]:
    """(1-based line number, comment text) of every comment in `text`."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        comment = _comment(line)
        if comment is not None:
            found.append((number, comment))
    return found


def lost_comments(old_text: str, new_text: str) -> tuple[tuple[int, str], ...]:
    """Comments of `old_text` that `new_text` no longer holds (counted, so repeated ones are caught)."""
    remaining = Counter(comment for _, comment in comments(new_text))
    lost = []
    for number, comment in comments(old_text):
        if remaining[comment] > 0:
            remaining[comment] -= 1
        else:
            lost.append((number, comment))
    return tuple(lost)
