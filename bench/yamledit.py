"""Cost of the comment-preserving YAML path against a bare libyaml load + dump.

    .venv/bin/python bench/yamledit.py [--corpus DIR] [--docs 10000] [--repeat 3]

Per document (GPU documents of the corpus): libyaml load+dump (the baseline), split, compose,
edit_document on a typical GPU edit (verification included), a plain ruamel round trip.
Per stream: N documents, 10% GPU documents that change, 90% untouched, through
split + edit + join, against load_all + dump_all of the same stream.
"""

from __future__ import annotations

import argparse
import copy
import io
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from manifest_tree import CORPUS, CORPUS_VARIABLE
from ruamel.yaml import YAML

from dra_migrate.manifests.yamltext import edit_document, split_stream
from dra_migrate.manifests.yamltext.split import event_document_starts, scan_document_starts

_VENDOR = re.compile(r"^[a-z0-9.-]+\.(?:com|ai|io)/")
_START = re.compile(r"^---(?=[ \t\r\n]|\Z)", re.M)


def gpu_edit(obj: Any) -> Any:
    """A typical translator change: vendor resources out, a claim in, the pod gets resourceClaims."""
    new = copy.deepcopy(obj)

    def walk(node: Any, pod: dict[str, Any] | None) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, pod)
            return
        if not isinstance(node, dict):
            return
        if isinstance(node.get("containers"), list):
            pod = node
        res = node.get("resources")
        if isinstance(res, dict) and _drop_vendor(res):
            res["claims"] = [{"name": "gpu"}]
            if pod is not None:
                pod["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]
        for value in list(node.values()):
            walk(value, pod)

    walk(new, None)
    return new


def _drop_vendor(res: dict[str, Any]) -> bool:
    found = False
    for section in ("limits", "requests"):
        amounts = res.get(section)
        if isinstance(amounts, dict):
            for key in [k for k in amounts if _VENDOR.match(str(k))]:
                del amounts[key]
                found = True
            if not amounts:
                del res[section]
    return found


def best(fn: Callable[[], object], repeat: int, loops: int = 1) -> float:
    """Best wall time of one call, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        times.append((time.perf_counter() - start) / loops)
    return min(times)


def ruamel_roundtrip(text: str) -> str:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    out = io.StringIO()
    rt.dump(rt.load(text), out)
    return out.getvalue()


def load_dump(text: str) -> str:
    return yaml.dump(yaml.load(text, Loader=yaml.CSafeLoader), Dumper=yaml.CSafeDumper, sort_keys=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPUS / "legacy")
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.corpus.is_dir():
        reason = f"{args.corpus} is missing (set {CORPUS_VARIABLE} or --corpus)"
        print(f"benchmark skipped: {reason}", file=sys.stderr)
        return 0

    gpu: list[tuple[str, Any, Any]] = []
    plain: list[str] = []
    for path in sorted(args.corpus.glob("*")):
        for doc in split_stream(path.read_text(encoding="utf-8")).documents:
            # pieces that join into a valid stream in any order
            text = doc.text if doc.text.endswith("\n") else doc.text + "\n"
            text = text if _START.search(text) else "---\n" + text
            new = gpu_edit(doc.obj)
            (gpu.append((text, doc.obj, new)) if new != doc.obj else plain.append(text))
    print(f"corpus: {len(gpu)} GPU documents, {len(plain)} others, from {args.corpus}")

    per_doc(gpu, args.repeat)
    per_stream(gpu, plain, args.docs, args.repeat)
    return 0


def per_doc(gpu: list[tuple[str, Any, Any]], repeat: int) -> None:
    texts = [t for t, _, _ in gpu]
    base = best(lambda: [load_dump(t) for t in texts], repeat) / len(texts)
    rows = [
        ("baseline load+dump", base),
        ("load only", best(lambda: [yaml.load(t, Loader=yaml.CSafeLoader) for t in texts], repeat) / len(texts)),
        ("split_stream", best(lambda: [split_stream(t) for t in texts], repeat) / len(texts)),
        ("compose", best(lambda: [yaml.compose(t, Loader=yaml.CSafeLoader) for t in texts], repeat) / len(texts)),
        ("edit_document (GPU edit)", best(lambda: [edit_document(*g) for g in gpu], repeat) / len(gpu)),
        ("ruamel round trip", best(lambda: [ruamel_roundtrip(t) for t in texts[:40]], 1) / min(40, len(texts))),
    ]
    methods: dict[str, int] = {}
    for g in gpu:
        method = edit_document(*g).method
        methods[method] = methods.get(method, 0) + 1
    print(f"\nper GPU document (mean {sum(map(len, texts)) // len(texts)} chars), methods: {methods}")
    print(f"{'':28}{'us/doc':>10}{'x baseline':>12}")
    for name, seconds in rows:
        print(f"{name:28}{seconds * 1e6:10.1f}{seconds / base:12.2f}")


def per_stream(gpu: list[tuple[str, Any, Any]], plain: list[str], count: int, repeat: int) -> None:
    changed = count // 10
    pieces = [gpu[i % len(gpu)][0] for i in range(changed)]
    pieces += [plain[i % len(plain)] if plain else gpu[i % len(gpu)][0] for i in range(count - changed)]
    # spread the changed documents evenly: every tenth one
    order = [pieces[changed + i - i // 10 - 1] if i % 10 else pieces[i // 10] for i in range(count)]
    stream = "".join(order)
    news = {}
    for text, _, new in gpu:
        news[text] = new

    def baseline() -> None:
        yaml.dump_all(list(yaml.load_all(stream, Loader=yaml.CSafeLoader)), Dumper=yaml.CSafeDumper, sort_keys=False)

    def translate() -> str:
        split = split_stream(stream)
        out = []
        for doc in split.documents:
            new = news.get(doc.text)
            out.append(doc.text if new is None else edit_document(doc.text, doc.obj, new).text)
        return split.join(out)

    base = best(baseline, repeat)
    load_time = best(lambda: list(yaml.load_all(stream, Loader=yaml.CSafeLoader)), repeat)
    scan_time = best(lambda: scan_document_starts(stream), repeat)
    event_time = best(lambda: event_document_starts(stream), repeat)
    split_time = best(lambda: split_stream(stream), repeat)
    total = best(translate, repeat)
    print(f"\nstream of {count} documents ({changed} changed, {len(stream) // 1024} KiB)")
    print(f"{'':36}{'seconds':>10}{'x baseline':>12}")
    for name, seconds in [
        ("baseline load_all+dump_all", base),
        ("load_all alone", load_time),
        ("  boundaries by regex scan", scan_time),
        ("  boundaries by libyaml events", event_time),
        ("split_stream (load_all + regex)", split_time),
        ("split + edit changed + join", total),
    ]:
        print(f"{name:36}{seconds:10.3f}{seconds / base:12.2f}")


if __name__ == "__main__":
    sys.exit(main())
