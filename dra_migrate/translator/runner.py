"""Files through the pipeline, in input order, on one core or several.

With several jobs, `jobs` worker processes read and convert batches of YAML files. This process
places each file's ResourceClaimTemplates in input order (pipeline.place_templates), so the output
is exactly that of a one-core run, and writes the results. It converts no batch itself: placing,
writing, diffing and reporting every file already costs it about as much as a worker's share of
converting, so a share of its own would make it the slowest process of the run. Stdin, JSON files and
pipes are converted here: they are few, and JSON places its templates as it converts.
At most a few batches per worker are in flight, so memory does not grow with the tree.
"""

from __future__ import annotations

import itertools
import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from dra_migrate.manifests.yamltext.split import scan_document_starts
from dra_migrate.translator.conversion.pipeline import FileResult, RunOptions, process_yaml
from dra_migrate.translator.reading.inputs import InputTooLargeError, read_file
from dra_migrate.translator.reading.sources import Source

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


class Work:
    """What converting a YAML file needs, sent once to each worker when it starts."""

    __slots__ = ("max_bytes", "options")

    def __init__(self, options: RunOptions, max_bytes: int) -> None:
        self.options = options
        self.max_bytes = max_bytes


class Steps(Protocol):
    """The run's side: which files need it, and what happens to a file before and after converting."""

    work: Work

    def admit(self, source: Source) -> FileResult | None:
        """Called in input order: a result for a file that is not converted (a second link to it)."""

    def local(self, source: Source) -> bool:
        """Whether the file is converted in this process (stdin, JSON, a pipe read once)."""

    def whole(self, source: Source) -> FileResult:
        """Read, convert and place one file here."""

    def place(self, result: FileResult) -> FileResult:
        """Place the templates of a YAML file converted by `convert_unplaced`, in input order."""


def read_error(exc: Exception) -> str:
    return f"cannot read: {getattr(exc, 'strerror', None) or exc}"


def convert_unplaced(source: Source, work: Work, text: str | None = None, first_line: int = 0) -> FileResult:
    """One YAML file (or a chunk of one), never raising: what fails is an error in its result."""
    if text is None:
        assert source.path is not None, "stdin is converted by the run itself"
        try:
            text = read_file(source.path, work.max_bytes)
        except (OSError, UnicodeDecodeError, InputTooLargeError) as exc:
            result = FileResult(source, "", "")
            result.error = read_error(exc)
            return result
    try:
        return process_yaml(source, text, work.options, first_line)
    except Exception as exc:  # one bad file must not stop a bulk run or leak a traceback
        result = FileResult(source, text, text)
        result.error = f"internal error, file left unchanged: {type(exc).__name__}: {exc}"
        return result


def run_files(sources: Iterable[Source], steps: Steps, jobs: int) -> Iterator[FileResult]:
    """FileResults in the order of `sources`, with templates placed as a one-core run places them."""
    sources = iter(sources)
    head = list(itertools.islice(sources, MIN_FILES))
    if jobs <= 1 or (len(head) < MIN_FILES and not any(_large(s) for s in head)):
        for source in itertools.chain(head, sources):
            yield steps.admit(source) or steps.whole(source)
        return
    yield from _parallel(itertools.chain(head, sources), steps, jobs)


# Set in each worker when it starts, read by _convert_batch and _convert_chunk.
_worker_state: Work | None = None


def _init_worker(work: Work) -> None:
    import signal  # workers only: its import builds enums, milliseconds of a one-file run's start

    global _worker_state
    _worker_state = work
    # A forked worker inherits the run's SIGTERM handler (it removes temporary files, which a
    # worker never has) and Ctrl-C reaches the whole process group: the run itself stops the
    # workers, and SIGTERM must end one wherever it is, even waiting on a queue lock.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _convert_batch(batch: list[Source]) -> list[FileResult]:
    assert _worker_state is not None
    return [convert_unplaced(source, _worker_state) for source in batch]


def _convert_chunk(source: Source, chunk: str, first_line: int) -> FileResult:
    assert _worker_state is not None
    return convert_unplaced(source, _worker_state, chunk, first_line)


class _Item:
    """One entry of the ordered queue: a ready result, a file for here, a large file, or a batch sent to a worker."""

    __slots__ = ("batch", "future", "here", "large", "ready")

    def __init__(
        self,
        *,
        ready: FileResult | None = None,
        here: Source | None = None,
        large: Source | None = None,
        batch: list[Source] | None = None,
    ) -> None:
        self.ready = ready
        self.here = here
        self.large = large
        self.batch = batch
        self.future: AsyncResult[list[FileResult]] | None = None


def _items(sources: Iterator[Source], steps: Steps) -> Iterator[_Item]:
    """In input order; a file that is not batched closes the batch before it."""
    batch: list[Source] = []
    for source in sources:
        ready = steps.admit(source)
        single = None
        if ready is not None:
            single = _Item(ready=ready)
        elif steps.local(source):
            single = _Item(here=source)
        elif _large(source):
            single = _Item(large=source)
        if single is None:
            batch.append(source)
            if len(batch) < BATCH_FILES:
                continue
        if batch:
            yield _Item(batch=batch)
            batch = []
        if single is not None:
            yield single
    if batch:
        yield _Item(batch=batch)


def _parallel(sources: Iterator[Source], steps: Steps, jobs: int) -> Iterator[FileResult]:
    """Batches converted by `jobs` workers, results taken in input order."""
    import multiprocessing  # only trees of many files load it

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    pool: Pool = context.Pool(jobs, initializer=_init_worker, initargs=(steps.work,))
    pending: deque[_Item] = deque()
    items = _items(sources, steps)
    finished = False
    try:
        while True:
            while len(pending) < jobs * IN_FLIGHT:
                item = next(items, None)
                if item is None:
                    break
                if item.batch is not None:
                    item.future = pool.apply_async(_convert_batch, (item.batch,))
                pending.append(item)
            if not pending:
                break
            yield from _results(pending.popleft(), steps, pool)
        finished = True
    finally:
        if finished:  # idle workers leave when told to, no signal needed
            pool.close()
        else:  # an error, an interrupt or a reader that stopped early
            pool.terminate()
        pool.join()


def _results(item: _Item, steps: Steps, pool: Pool) -> Iterator[FileResult]:
    if item.ready is not None:
        yield item.ready
    elif item.here is not None:
        yield steps.whole(item.here)
    elif item.large is not None:
        yield _convert_large(item.large, pool, steps)
    else:
        assert item.future is not None, "every batch goes to a worker"
        for result in item.future.get():
            yield steps.place(result)


def _large(source: Source) -> bool:
    """A YAML file big enough to split among the workers (one file of thousands of documents)."""
    try:
        return source.path is not None and not source.is_json and source.path.stat().st_size >= LARGE_FILE
    except OSError:
        return False


def _convert_large(source: Source, pool: Pool, steps: Steps) -> FileResult:
    """Chunks of whole documents converted in parallel, then joined as one file's result.

    A document converts the same alone as in its stream (yamltext.split), so the joined result is
    the one-piece result; when a chunk meets an error or holds no objects, the whole file is
    converted again in one piece, so that it is reported exactly as before.
    """
    assert source.path is not None
    try:
        text = read_file(source.path, steps.work.max_bytes)
    except (OSError, UnicodeDecodeError, InputTooLargeError):
        return steps.whole(source)  # which reports the error
    starts = scan_document_starts(text)
    if not starts or starts[0] != 0:
        return steps.whole(source)
    chunks: list[tuple[str, int]] = []  # (text, its first line in the file)
    begin = line = 0
    for start in [*starts[1:], len(text)]:
        if start - begin >= CHUNK_BYTES or start == len(text):
            chunk = text[begin:start]
            chunks.append((chunk, line))
            line += chunk.count("\n")
            begin = start
    futures = [pool.apply_async(_convert_chunk, (source, chunk, line)) for chunk, line in chunks]
    parts = [future.get() for future in futures]
    if any(p.error is not None or p.skipped is not None or _tail(p) for p in parts[:-1]) or (
        parts[-1].error is not None or parts[-1].skipped is not None
    ):
        return steps.whole(source)
    return steps.place(_join(source, text, parts))


def _join(source: Source, text: str, parts: list[FileResult]) -> FileResult:
    joined = FileResult(source, text, "")
    offset = 0  # where the part's chunk starts in the file
    for part in parts:
        for report in part.documents:
            report.index += len(joined.documents)
            report.start += offset
            report.end += offset
        offset += len(part.original)
        joined.documents.extend(part.documents)
        joined.parts.extend(part.parts)
        joined.wanted.extend(part.wanted)
        joined.existing.extend(part.existing)
        joined.extended.update(part.extended)
        joined.file_findings.extend(part.file_findings)
    joined.text = "".join(joined.parts) + _tail(parts[-1])
    return joined


def _tail(part: FileResult) -> str:
    """Text after the last document of a converted piece (only the last chunk may have it)."""
    return part.text[sum(len(p) for p in part.parts) :]
