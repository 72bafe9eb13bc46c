"""Files through the pipeline, in input order, on one core or several.

With several jobs, worker processes read and convert batches of YAML files while this process
converts its own share; it places each file's ResourceClaimTemplates in input order
(pipeline.place_templates), so the output is exactly that of a one-core run. JSON files and stdin
are converted here: they are few and quick.
At most a few batches per worker are in flight, so memory does not grow with the tree.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from dra_migrate.translator.pipeline import FileResult, RunOptions, place_templates, process, process_yaml
from dra_migrate.translator.registry import TemplateKey, TemplateRegistry, template_key
from dra_migrate.translator.sources import Source
from dra_migrate.translator.yamltext.split import scan_document_starts

if TYPE_CHECKING:
    from multiprocessing.pool import AsyncResult, Pool

BATCH_FILES = 8  # files per task: enough to hide the cost of a round trip
IN_FLIGHT = 4  # batches per worker not yet collected
MIN_FILES = 16  # below this, starting workers costs more than it saves
LARGE_FILE = 4 << 20  # a file this big is split into chunks of documents among the workers
CHUNK_BYTES = 1 << 20


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def read_source(source: Source, stdin_text: str | None) -> str:
    if source.path is None:
        return stdin_text or ""
    return source.path.read_text(encoding="utf-8")


def convert_source(
    source: Source,
    stdin_text: str | None,
    registry: TemplateRegistry,
    options: RunOptions,
    place: bool = True,
    text: str | None = None,
) -> FileResult:
    """One file, never raising: a file that cannot be read or converted is an error in its result."""
    try:
        text = read_source(source, stdin_text) if text is None else text
    except (OSError, UnicodeDecodeError) as exc:
        result = FileResult(source, "", "")
        result.error = f"cannot read: {getattr(exc, 'strerror', None) or exc}"
        return result
    try:
        if place:
            return process(source, text, registry, options)
        return process_yaml(source, text, registry, options)
    except Exception as exc:  # one bad file must not stop a bulk run or leak a traceback
        result = FileResult(source, text, text)
        result.error = f"internal error, file left unchanged: {type(exc).__name__}: {exc}"
        return result


def run_files(
    sources: Iterable[Source], stdin_text: str | None, registry: TemplateRegistry, options: RunOptions, jobs: int
) -> Iterator[FileResult]:
    """FileResults in the order of `sources`, with templates placed as a one-core run places them."""
    sources = iter(sources)
    head = list(itertools.islice(sources, MIN_FILES))
    if jobs <= 1 or (len(head) < MIN_FILES and not any(_large(s) for s in head)):
        for source in itertools.chain(head, sources):
            yield convert_source(source, stdin_text, registry, options)
        return
    yield from _parallel(itertools.chain(head, sources), stdin_text, registry, options, jobs)


# Set in the parent before the workers fork (or passed to them on start), read by _convert_batch.
_worker_state: tuple[TemplateRegistry, RunOptions] | None = None


def _init_worker(registry: TemplateRegistry, options: RunOptions) -> None:
    global _worker_state
    _worker_state = (registry, options)


def _convert_chunk(source: Source, chunk: str) -> FileResult:
    assert _worker_state is not None
    registry, options = _worker_state
    return process_yaml(source, chunk, registry, options)


def _convert_batch(batch: list[Source]) -> list[FileResult]:
    assert _worker_state is not None
    registry, options = _worker_state
    # The worker's registry only knows the templates already in the inputs: it never claims.
    return [convert_source(source, None, registry, options, place=False) for source in batch]


def _parallel(
    sources: Iterator[Source], stdin_text: str | None, registry: TemplateRegistry, options: RunOptions, jobs: int
) -> Iterator[FileResult]:
    """This process is one of the `jobs`: it converts every jobs-th batch itself, workers the rest."""
    import multiprocessing  # only trees of many files load it

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    pool: Pool = context.Pool(jobs - 1, initializer=_init_worker, initargs=(registry.copy(), options))
    pending: deque[tuple[list[Source], AsyncResult[list[FileResult]] | None]] = deque()
    try:
        batches = enumerate(_batches(sources))
        while True:
            while len(pending) < jobs * IN_FLIGHT:
                index, batch = next(batches, (0, []))
                if not batch:
                    break
                # stdin, JSON and large files (split into chunks among the workers) are handled here
                here = index % jobs == 0 or _converted_here(batch[0]) or _large(batch[0])
                pending.append((batch, None if here else pool.apply_async(_convert_batch, (batch,))))
            if not pending:
                break
            batch, future = pending.popleft()
            if future is None and _large(batch[0]):
                yield _convert_large(batch[0], pool, jobs, registry, options)
                continue
            if future is None:
                for source in batch:
                    yield convert_source(source, stdin_text, registry, options)
                continue
            for result in future.get():
                yield place_templates(result, registry, options)
    finally:
        pool.terminate()
        pool.join()


def _batches(sources: Iterator[Source]) -> Iterator[list[Source]]:
    """Batches of YAML files; a JSON file or stdin gets a batch of its own, kept in order."""
    batch: list[Source] = []
    for source in sources:
        if _converted_here(source) or _large(source):
            if batch:
                yield batch
                batch = []
            yield [source]
            continue
        batch.append(source)
        if len(batch) == BATCH_FILES:
            yield batch
            batch = []
    if batch:
        yield batch


def _converted_here(source: Source) -> bool:
    return source.path is None or source.is_json


def _large(source: Source) -> bool:
    """A YAML file big enough to split among the workers (one file of thousands of documents)."""
    try:
        return source.path is not None and not source.is_json and source.path.stat().st_size >= LARGE_FILE
    except OSError:
        return False


def _convert_large(
    source: Source, pool: Pool, jobs: int, registry: TemplateRegistry, options: RunOptions
) -> FileResult:
    """Chunks of whole documents converted in parallel, then joined as one file's result.

    A document converts the same alone as in its stream (yamltext.split), so the joined result is
    the one-piece result; when a chunk meets an error or a template file, the whole file is
    converted again in one piece, so that it is reported exactly as before.
    """
    try:
        text = read_source(source, None)
    except (OSError, UnicodeDecodeError):
        return convert_source(source, None, registry, options)
    starts = scan_document_starts(text)
    if not starts or starts[0] != 0:
        return convert_source(source, None, registry, options, text=text)
    chunks, begin = [], 0
    for start in [*starts[1:], len(text)]:
        if start - begin >= CHUNK_BYTES or start == len(text):
            chunks.append(text[begin:start])
            begin = start
    futures = [None if i % jobs == 0 else pool.apply_async(_convert_chunk, (source, c)) for i, c in enumerate(chunks)]
    parts = [
        process_yaml(source, chunk, registry, options) if future is None else future.get()
        for chunk, future in zip(chunks, futures, strict=True)
    ]
    if any(p.error is not None or (p.skipped is not None and not p.documents) for p in parts):
        return convert_source(source, None, registry, options, text=text)
    return place_templates(_join(source, text, parts), registry, options)


def _join(source: Source, text: str, parts: list[FileResult]) -> FileResult:
    joined = FileResult(source, text, "")
    wished: set[TemplateKey] = set()
    for part in parts:
        for report in part.documents:
            report.index += len(joined.documents)
        joined.documents.extend(part.documents)
        joined.parts.extend(part.parts)
        for wanted in part.wanted:
            kept = [t for t in wanted if template_key(t) not in wished]
            wished.update(template_key(t) for t in kept)
            joined.wanted.append(kept)
    joined.text = "".join(joined.parts)
    if not joined.documents or all(d.status == "skipped" for d in joined.documents):
        joined.skipped = "no Kubernetes objects (no apiVersion/kind)"
    return joined
