"""Float32 matrices on disk, read block by block in bounded memory, each checksummed segment verified.

The layout is NumPy's `.npy` (version 1: a C-ordered little-endian float32 (rows, dimension)
array), so `np.load(path, mmap_mode="r")` opens the file as a memory map. Files written here pad
the header to 4096 bytes, so rows start page-aligned, and append a trailer that NumPy ignores:
the row count and xxh3-128 digest of each checksummed segment, consecutive runs of rows (the
embedding cache uses its chunks), then a footer with the trailer's own digest. A plain `.npy`
file of that dtype reads too, unverified.

Rows are read with pread into buffers the caller owns, not through one mapping of the whole
file: every page of a mapping that a scan touches counts in the process's resident size until
the kernel chooses to drop it, and an 8 GiB mapping cannot even be made under a 2 GiB
address-space limit, whereas reads keep the memory at the buffers whatever the file's size.
"""

from __future__ import annotations

import fcntl
import os
import struct
from pathlib import Path

import numpy as np

from .errors import DataError

HEADER_BYTES = 4096
_FOOTER = struct.Struct("<QQ16s8s")  # segments, trailer bytes, trailer digest, magic
_FOOTER_MAGIC = b"ERMATRX1"
_NPY_MAGIC = b"\x93NUMPY\x01\x00"
_LOAD_PIECE = 4 << 20  # bytes per read when a whole matrix is loaded: hashed while in the CPU cache


class MatrixDamaged(DataError):
    """A matrix file that is truncated, malformed or fails a segment checksum."""

    def __init__(self, path: Path, problem: str):
        super().__init__(
            f"matrix file {path} is damaged ({problem})",
            "delete it and rerun; the embedding cache rebuilds it from its chunks",
        )
        self.path = Path(path)
        self.problem = problem


def digest(data) -> bytes:
    """The checksum of a segment: xxh3-128 (33 GB/s here, and it releases the GIL)."""
    import xxhash

    return xxhash.xxh3_128_digest(data)


def _byte_view(array: np.ndarray) -> memoryview:
    return memoryview(array).cast("B")


def pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Fill `view` from `offset` of the file (no intermediate copy); returns the bytes read
    (fewer only at end of file). The fd must not be shared between threads without preadv."""
    done = 0
    while done < len(view):
        if hasattr(os, "preadv"):
            got = os.preadv(fd, [view[done:]], offset + done)
        else:  # e.g. macOS before 11
            os.lseek(fd, offset + done, os.SEEK_SET)
            got = os.readv(fd, [view[done:]])
        if got == 0:
            break
        done += got
    return done


def _pwrite_all(fd: int, data: memoryview | bytes, offset: int) -> None:
    view = memoryview(data).cast("B")
    done = 0
    while done < len(view):
        done += os.pwrite(fd, view[done:], offset + done)


def _npy_header(rows: int, dimension: int) -> bytes:
    text = repr({"descr": "<f4", "fortran_order": False, "shape": (rows, dimension)})
    body = text.encode("latin1").ljust(HEADER_BYTES - len(_NPY_MAGIC) - 2 - 1) + b"\n"
    return _NPY_MAGIC + struct.pack("<H", len(body)) + body


class MatrixFile:
    """A (rows, dimension) float32 matrix in a file: its shape, where the rows start, and the
    checksummed segments (row counts and digests) when the file has them."""

    def __init__(
        self,
        path: Path,
        rows: int,
        dimension: int,
        offset: int = HEADER_BYTES,
        segments: np.ndarray | None = None,
        digests: list[bytes] | None = None,
    ):
        self.path = Path(path)
        self.rows = rows
        self.dimension = dimension
        self.offset = offset
        self.segments = segments
        self.digests = digests
        # bounds[i] = the first row of segment i; bounds[-1] = rows.
        self.bounds = None if segments is None else np.concatenate([[0], np.cumsum(segments, dtype=np.int64)])

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows, self.dimension

    @property
    def nbytes(self) -> int:
        return self.rows * self.dimension * 4

    def __repr__(self) -> str:
        return f"MatrixFile({str(self.path)!r}, rows={self.rows}, dimension={self.dimension})"

    @classmethod
    def open(cls, path: Path) -> MatrixFile:
        """Read the header and trailer (not the rows); MatrixDamaged when they are inconsistent."""
        path = Path(path)
        with open(path, "rb") as handle:
            try:
                version = np.lib.format.read_magic(handle)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
                else:
                    raise ValueError(f"unsupported .npy version {version}")
            except (ValueError, OSError, SyntaxError) as exc:
                raise MatrixDamaged(path, f"not a .npy file: {exc}") from None
            offset = handle.tell()
            size = os.fstat(handle.fileno()).st_size
            if dtype != np.dtype("<f4") or fortran or len(shape) != 2:
                raise MatrixDamaged(path, f"holds {dtype} {shape}{' fortran' if fortran else ''}, not a float32 matrix")
            rows, dimension = int(shape[0]), int(shape[1])
            end = offset + rows * dimension * 4
            if size == end:
                return cls(path, rows, dimension, offset)
            if size < end + _FOOTER.size:
                raise MatrixDamaged(path, f"{size} bytes, expected {end} or more (truncated?)")
            handle.seek(size - _FOOTER.size)
            count, tail_bytes, tail_digest, magic = _FOOTER.unpack(handle.read(_FOOTER.size))
            if magic != _FOOTER_MAGIC or tail_bytes != count * 20 or end + tail_bytes + _FOOTER.size != size:
                raise MatrixDamaged(path, "bad trailer")
            handle.seek(end)
            tail = handle.read(tail_bytes)
        if len(tail) != tail_bytes or digest(tail) != tail_digest:
            raise MatrixDamaged(path, "trailer checksum mismatch")
        segments = np.frombuffer(tail, dtype="<u4", count=count).astype(np.int64)
        if int(segments.sum()) != rows or (count and int(segments.min()) < 1):
            raise MatrixDamaged(path, "segments do not cover the rows")
        digests = [tail[count * 4 + 16 * i : count * 4 + 16 * (i + 1)] for i in range(count)]
        return cls(path, rows, dimension, offset, segments, digests)

    def memmap(self) -> np.ndarray:
        """The rows as a read-only memory map (unverified)."""
        return np.memmap(self.path, dtype="<f4", mode="r", offset=self.offset, shape=self.shape)

    def blocks(self, target_rows: int, start: int = 0, stop: int | None = None) -> list[tuple[int, int]]:
        """(start, stop) row ranges of about `target_rows` each, covering rows start:stop (all by
        default); with segments, every block is whole segments (a segment longer than the target
        is a block of its own), so start and stop must be segment boundaries."""
        target = max(1, int(target_rows))
        stop = self.rows if stop is None else stop
        if self.bounds is None:
            return [(a, min(stop, a + target)) for a in range(start, stop, target)]
        bounds = self.bounds
        out = []
        at = int(np.searchsorted(bounds, start))
        last = int(np.searchsorted(bounds, stop))
        if bounds[at] != start or bounds[last] != stop:
            raise ValueError(f"rows {start}:{stop} are not whole segments of {self.path}")
        while at < last:
            first = int(bounds[at])
            end = min(last, max(at + 1, int(np.searchsorted(bounds, first + target, side="right")) - 1))
            out.append((first, int(bounds[end])))
            at = end
        return out

    def reader(self) -> MatrixReader:
        return MatrixReader(self)

    def load(self) -> np.ndarray:
        """All rows in memory, each segment verified."""
        out = np.empty(self.shape, dtype=np.float32)
        piece = max(1, _LOAD_PIECE // max(1, self.dimension * 4))
        with self.reader() as reader:
            for start, stop in self.blocks(piece):
                reader.read(start, stop, out[start:stop])
        return out


class MatrixReader:
    """An open matrix file: `read(start, stop, out)` fills out[: stop - start] and verifies the
    segments in that range (which must be whole segments when the file has them)."""

    def __init__(self, matrix: MatrixFile):
        self.matrix = matrix
        self.fd = os.open(matrix.path, os.O_RDONLY)
        try:
            size = os.fstat(self.fd).st_size
            if size < matrix.offset + matrix.nbytes:
                raise MatrixDamaged(matrix.path, f"{size} bytes, expected {matrix.offset + matrix.nbytes} (truncated?)")
            if hasattr(os, "posix_fadvise"):  # not on macOS
                os.posix_fadvise(self.fd, 0, 0, os.POSIX_FADV_SEQUENTIAL)
        except BaseException:
            os.close(self.fd)
            raise

    def read(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        matrix = self.matrix
        rows = out[: stop - start]
        if rows.shape != (stop - start, matrix.dimension) or not rows.flags.c_contiguous or rows.dtype != np.float32:
            raise ValueError(f"read buffer {out.shape} {out.dtype} cannot take rows {start}:{stop}")
        view = _byte_view(rows)
        if pread_into(self.fd, view, matrix.offset + start * matrix.dimension * 4) != len(view):
            raise MatrixDamaged(matrix.path, f"rows {start}:{stop} cut short (truncated?)")
        if matrix.bounds is not None and matrix.digests is not None:
            first = int(np.searchsorted(matrix.bounds, start))
            last = int(np.searchsorted(matrix.bounds, stop))
            if matrix.bounds[first] != start or matrix.bounds[last] != stop:
                raise ValueError(f"rows {start}:{stop} are not whole segments of {matrix.path}")
            row_bytes = matrix.dimension * 4
            for segment in range(first, last):
                a = (int(matrix.bounds[segment]) - start) * row_bytes
                b = (int(matrix.bounds[segment + 1]) - start) * row_bytes
                if digest(view[a:b]) != matrix.digests[segment]:
                    raise MatrixDamaged(
                        matrix.path,
                        f"checksum mismatch in rows {matrix.bounds[segment]}:{matrix.bounds[segment + 1]}",
                    )
        return rows

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> MatrixReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class MatrixWriter:
    """Write a (rows, dimension) matrix file whose pieces arrive in any order; each placed piece
    becomes a checksummed segment. Built under `<path>.partial`, held with an exclusive lock
    (a second writer of the same file waits, and a dead writer's partial file is reused), then
    renamed into place by `finish`: readers see the old file or the complete new one."""

    def __init__(self, path: Path, rows: int, dimension: int):
        self.path = Path(path)
        self.rows, self.dimension = rows, dimension
        self.partial = self.path.with_name(self.path.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = self._lock_partial()
        self._pieces: dict[int, tuple[int, bytes]] = {}
        os.ftruncate(self.fd, 0)
        os.ftruncate(self.fd, HEADER_BYTES + rows * dimension * 4)
        _pwrite_all(self.fd, _npy_header(rows, dimension), 0)

    def _lock_partial(self) -> int:
        while True:
            fd = os.open(self.partial, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(self.partial).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False  # the holder renamed it into place while we waited
            if same:
                return fd
            os.close(fd)

    def place(self, start: int, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        count = vectors.shape[0]
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension or not 0 <= start <= self.rows - count:
            raise ValueError(f"rows {start}:{start + count} of shape {vectors.shape} do not fit {self.path}")
        if count == 0:
            return
        data = _byte_view(vectors)
        _pwrite_all(self.fd, data, HEADER_BYTES + start * self.dimension * 4)
        self._pieces[start] = (count, digest(data))

    def finish(self) -> MatrixFile:
        """Check every row was placed once, write the trailer, sync and rename into place."""
        segments, digests, cursor = [], [], 0
        for start in sorted(self._pieces):
            count, checksum = self._pieces[start]
            if start != cursor:
                raise ValueError(f"{self.path}: rows {cursor}:{start} were never placed (or overlap)")
            segments.append(count)
            digests.append(checksum)
            cursor += count
        if cursor != self.rows:
            raise ValueError(f"{self.path}: rows {cursor}:{self.rows} were never placed")
        counts = np.asarray(segments, dtype="<u4")
        tail = counts.tobytes() + b"".join(digests)
        footer = _FOOTER.pack(len(segments), len(tail), digest(tail), _FOOTER_MAGIC)
        _pwrite_all(self.fd, tail + footer, HEADER_BYTES + self.rows * self.dimension * 4)
        os.fsync(self.fd)
        os.replace(self.partial, self.path)
        self._close()
        return MatrixFile(self.path, self.rows, self.dimension, HEADER_BYTES, counts.astype(np.int64), digests)

    def abort(self) -> None:
        """Drop the partial file (the lock is still held, so no other writer is using it)."""
        if self.fd >= 0:
            try:
                os.unlink(self.partial)
            except FileNotFoundError:
                pass
            self._close()

    def _close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # releases the lock
            self.fd = -1

    def __enter__(self) -> MatrixWriter:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self._close()


def write_matrix(path: Path, matrix: np.ndarray, segment_rows: int = 4096) -> MatrixFile:
    """Write an in-memory matrix as a matrix file with `segment_rows`-row checksummed segments."""
    matrix = np.asarray(matrix, dtype=np.float32)
    with MatrixWriter(path, matrix.shape[0], matrix.shape[1]) as writer:
        for start in range(0, matrix.shape[0], max(1, segment_rows)):
            writer.place(start, matrix[start : start + segment_rows])
        return writer.finish()
