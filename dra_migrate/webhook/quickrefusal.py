"""Which requests a worker may refuse straight from the bytes it read, before gunicorn parses them.

While the queue stands (webhook/shedding.py), most of what arrives is refused, and gunicorn's HTTP
parser (Python) costs several times more than the refusal itself: at four times the rate a worker
serves, the refusals took the time the reviews needed. A request is refused from its bytes only when
it is a review request of the plainest form, whose end is certain without gunicorn: the request line
`POST /mutate HTTP/1.1`, header lines `name: value` of visible ASCII, one Content-Length, no
Transfer-Encoding, no Connection or Expect, the whole header block at hand. Anything else goes to
gunicorn as it came (and the queue rule applies there), so the two never disagree on where a request
ends. It is only ever applied where a request begins (webhook/worker.py knows where).
"""

from __future__ import annotations

import re

REQUEST_LINE = b"POST /mutate HTTP/1.1"
MAX_HEAD_BYTES = 8192
# Larger bodies are not skipped here: gunicorn's path refuses them too.
MAX_BODY_BYTES = 256 * 1024
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VALUE = re.compile(rb"[\t\x20-\x7e]*")
_DIGITS = re.compile(rb"[0-9]{1,9}")
_REFUSED_HEADERS = frozenset({b"transfer-encoding", b"connection", b"expect"})


def refusable_size(data: bytes) -> int | None:
    """The length of the plain review request at the start of `data` (header block and body, the body
    perhaps not all in `data` yet); None when there is none whose end is certain."""
    end = data.find(b"\r\n\r\n", 0, MAX_HEAD_BYTES)
    if end < 0:
        return None
    request_line, *lines = data[:end].split(b"\r\n")
    if request_line != REQUEST_LINE:
        return None
    length: int | None = None
    for line in lines:
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name) or not _VALUE.fullmatch(value):
            return None
        lowered = name.lower()
        if lowered in _REFUSED_HEADERS:
            return None
        if lowered == b"content-length":
            number = value.strip(b" \t")
            if length is not None or not _DIGITS.fullmatch(number):
                return None
            length = int(number)
    if length is None or length > MAX_BODY_BYTES:
        return None
    return end + 4 + length
