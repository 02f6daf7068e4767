"""Recorded runs parked on disk between reading the inputs and replaying them: :class:`RunSpool`.

The bench reads every input once (the calibration needs all runs before any is replayed), then
replays the runs one by one in workers. Holding every parsed run in the main process would make
its memory grow with the number of runs, so each run is written here as it is read (pickled,
compressed: a few kB per run) and the main process keeps only a :class:`SpoolRef`. A pool
worker reads its run from the file itself (:func:`read_ref`); for Ray, whose workers may be on
other machines, the driver reads the bytes and ships them.

The file is private to the bench (created with mode 0600 by :func:`tempfile.mkstemp`), written
and read only by it, and removed when the spool closes.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from .._files import write_all
from .._tokens import EncodedTexts
from ._recorded import RecordedRun

__all__ = ["RunSpool", "SpoolRef", "load_encoded", "load_run", "park_encoded", "read_ref"]


@dataclass(frozen=True, slots=True)
class SpoolRef:
    """Where one run lies in a spool file."""

    path: str
    offset: int
    length: int


def read_ref(ref: SpoolRef) -> bytes:
    """The bytes of one spooled run (from any process on this machine)."""
    with open(ref.path, "rb") as file:
        data = os.pread(file.fileno(), ref.length, ref.offset)
    if len(data) != ref.length:
        raise OSError(f"the bench's run spool {ref.path} was cut short (another process removed it?)")
    return data


def load_run(data: bytes) -> RecordedRun:
    """A run from its spooled bytes (written by this bench: the spool is never read from elsewhere)."""
    run = pickle.loads(zlib.decompress(data))
    if not isinstance(run, RecordedRun):
        raise TypeError(f"the run spool holds a {type(run).__name__}, not a recorded run")
    return run


def park_encoded(folder: str, encoded: EncodedTexts) -> SpoolRef:
    """Append ``encoded`` (a run's recorded texts' ids, from its calibration) to this process's file
    in ``folder`` (a private folder of the bench; one file per process, so its only writer knows
    where each value starts), for the run's replay, possibly in another process of this machine."""
    data = zlib.compress(pickle.dumps(encoded, protocol=pickle.HIGHEST_PROTOCOL), 1)
    path = os.path.join(folder, f"{os.getpid()}.ids")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        offset = os.fstat(fd).st_size
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    return SpoolRef(path, offset, len(data))


def load_encoded(ref: SpoolRef) -> EncodedTexts:
    """What :func:`park_encoded` parked at ``ref``."""
    encoded = pickle.loads(zlib.decompress(read_ref(ref)))
    if not isinstance(encoded, EncodedTexts):
        raise TypeError(f"the bench's token spool holds a {type(encoded).__name__}, not token ids")
    return encoded


class RunSpool:
    """An append-only temporary file of runs; a context manager that removes it."""

    def __init__(self, folder: Path | None = None) -> None:
        fd, name = tempfile.mkstemp(prefix="tiered-agent-runs-", suffix=".spool", dir=folder)
        self.path = name
        self._fd = fd
        self._size = 0

    def add(self, run: RecordedRun) -> SpoolRef:
        data = zlib.compress(pickle.dumps(run, protocol=pickle.HIGHEST_PROTOCOL), 1)
        write_all(self._fd, data, self.path, "the bench's temporary file of runs (TMPDIR)")
        ref = SpoolRef(self.path, self._size, len(data))
        self._size += len(data)
        return ref

    def read(self, ref: SpoolRef) -> bytes:
        """One run's bytes, read through the spool's own descriptor."""
        return os.pread(self._fd, ref.length, ref.offset)

    @property
    def size(self) -> int:
        """Bytes written so far."""
        return self._size

    def close(self) -> None:
        if self._fd < 0:
            return
        os.close(self._fd)
        self._fd = -1
        Path(self.path).unlink(missing_ok=True)

    def __enter__(self) -> RunSpool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
