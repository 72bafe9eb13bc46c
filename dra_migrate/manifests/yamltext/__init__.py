"""Comment- and layout-preserving text edits of YAML manifests.

    stream = split_stream(text)                  # documents with exact source and parsed value
    result = edit_document(doc.text, doc.obj, new)   # EditResult(text, method, reason)
    output = stream.join(...)                    # untouched documents byte for byte

`edit_document` edits only the changed nodes' text (surgical), and falls back to a ruamel.yaml
round trip, then to a plain dump, for shapes it declines; every result is re-parsed and checked.
"""

from dra_migrate.manifests.yamltext.edit import EditResult, Method, edit_document
from dra_migrate.manifests.yamltext.jsonstyle import dump_json_like
from dra_migrate.manifests.yamltext.split import Document, Stream, split_stream

__all__ = [
    "Document",
    "EditResult",
    "Method",
    "Stream",
    "dump_json_like",
    "edit_document",
    "split_stream",
]
