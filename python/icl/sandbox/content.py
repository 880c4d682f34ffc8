"""What a file is, by its bytes: archives, compressed streams, executables, declared data formats, text.

The provenance scan (:mod:`icl.sandbox.provenance`) never trusts a file's name: :func:`sniff` looks at the
bytes, :func:`unpack` opens archives and compressed streams within bounds (so the scan can recurse into
their members), and anything that is neither source text nor a declared open data format is *opaque*:
compiled code (ELF, PE, Mach-O, WebAssembly, Java classes, Python bytecode), a stream no module here can
open (zstd, 7z, rar), or a binary blob of no declared format, high entropy or not.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import re
import struct
import tarfile
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator

#: Archives whose members are listed, and compressed streams that are decompressed, then looked into.
ARCHIVES = ("zip", "tar")
STREAMS = ("gzip", "bzip2", "xz", "lzma")
#: Compiled code, and containers no module of this installation opens: always opaque.
OPAQUE_KINDS = {
    "elf": "ELF executable or shared object",
    "pe": "Windows PE executable",
    "macho": "Mach-O executable",
    "wasm": "WebAssembly module",
    "java-class": "Java class file",
    "pyc": "compiled Python bytecode",
    "zstd": "zstd stream (no module here opens it)",
    "7z": "7z archive (no module here opens it)",
    "rar": "rar archive (no module here opens it)",
}
#: Declared open data formats, by their leading bytes (``npz`` is a zip of ``.npy`` members).
DATA_MAGIC = (
    (b"\x93NUMPY", "npy"),
    (b"\x89PNG\r\n\x1a\n", "png"),
    (b"\xff\xd8\xff", "jpeg"),
    (b"GIF87a", "gif"),
    (b"GIF89a", "gif"),
    (b"II*\x00", "tiff"),
    (b"MM\x00*", "tiff"),
    (b"\x89HDF\r\n\x1a\n", "hdf5"),
    (b"%PDF-", "pdf"),
    (b"SIMPLE  =", "fits"),
    (b"BM", "bmp"),
)
_CODE_MAGIC = (
    (b"\x7fELF", "elf"),
    (b"MZ", "pe"),
    (b"\xfe\xed\xfa\xce", "macho"),
    (b"\xfe\xed\xfa\xcf", "macho"),
    (b"\xce\xfa\xed\xfe", "macho"),
    (b"\xcf\xfa\xed\xfe", "macho"),
    (b"\xca\xfe\xba\xbe", "java-class"),  # also a Mach-O universal binary: opaque either way
    (b"\x00asm", "wasm"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"Rar!\x1a\x07", "rar"),
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)
#: Memory the lzma decoder may use (the dictionary size is the stream's own claim).
LZMA_MEMORY = 256 * 1024**2
#: Bytes looked at to tell text from binary and to guess a language.
TEXT_PROBE = 64 * 1024
_PYTHON = re.compile(rb"^[ \t]*(def \w+\(|class \w+[(:]|import \w|from [\w.]+ import )", re.M)
_C = re.compile(rb"^[ \t]*#[ \t]*include[ \t]*[<\"]", re.M)


def sniff(data: bytes) -> str:
    """Kind of ``data``: an archive or stream name, an :data:`OPAQUE_KINDS` key, a data format, ``text``
    or ``binary``."""
    if _is_zip(data):
        return "zip"
    if len(data) > 262 and data[257:262] == b"ustar":
        return "tar"
    for magic, kind in _CODE_MAGIC:
        if data.startswith(magic) and (kind != "pe" or _is_pe(data)):
            return kind
    if _is_pyc(data):
        return "pyc"
    for magic, kind in DATA_MAGIC:
        if data.startswith(magic) and _data_ok(kind, data):
            return kind
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "webp"
    if _is_lzma_alone(data):
        return "lzma"
    if is_text(data):
        return "text"
    return "binary"


def _is_zip(data: bytes) -> bool:
    if not (data.startswith(b"PK\x03\x04") or b"PK\x05\x06" in data[-65557:]):
        return False
    return zipfile.is_zipfile(io.BytesIO(data))


def _is_pe(data: bytes) -> bool:
    """``MZ`` alone is two letters; a PE image points at its ``PE\\0\\0`` header from offset 0x3c."""
    if len(data) < 0x40:
        return False
    at = struct.unpack("<I", data[0x3C:0x40])[0]
    return data[at : at + 4] == b"PE\x00\x00"


def _is_pyc(data: bytes) -> bool:
    """A CPython 3 bytecode header: a 16-bit magic number (3000-3999 so far) then ``\\r\\n``."""
    if len(data) < 16 or data[2:4] != b"\r\n":
        return False
    return 3000 <= struct.unpack("<H", data[:2])[0] < 4000


def _is_lzma_alone(data: bytes) -> bool:
    """The legacy ``.lzma`` format has no magic: a properties byte, a dictionary size, then a stream."""
    if len(data) < 14 or data[0] >= 225:
        return False
    try:
        lzma.LZMADecompressor(lzma.FORMAT_ALONE, memlimit=LZMA_MEMORY).decompress(data[:65536], max_length=4096)
    except (lzma.LZMAError, EOFError):
        return False
    return True


def _data_ok(kind: str, data: bytes) -> bool:
    """Whether a file with a data format's magic parses as that format, where that is cheap to check.

    ``npy``: the header parses and the file holds exactly the bytes its shape and type say. ``png``: the
    chunks run to ``IEND`` and nothing follows. ``bmp``: the size in the header is the file's. Other formats
    are recognised by their leading bytes only.
    """
    if kind == "npy":
        return _npy_ok(data)
    if kind == "png":
        pos = 8
        while pos + 12 <= len(data):
            length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
            pos += 12 + length
            if ctype == b"IEND":
                return pos == len(data)
        return False
    if kind == "bmp":
        return len(data) >= 6 and struct.unpack("<I", data[2:6])[0] == len(data)
    return True


def _npy_ok(data: bytes) -> bool:
    import ast

    try:
        major = data[6]
        if major == 1:
            hlen, start = struct.unpack("<H", data[8:10])[0], 10
        else:
            hlen, start = struct.unpack("<I", data[8:12])[0], 12
        header = ast.literal_eval(data[start : start + hlen].decode("latin-1"))
        import numpy as np

        dtype = np.dtype(header["descr"])
        if dtype.hasobject:  # pickled objects: code, not data
            return False
        n = math.prod(header["shape"]) * dtype.itemsize
    except (ValueError, SyntaxError, KeyError, TypeError, IndexError, struct.error, MemoryError, RecursionError):
        return False
    return len(data) == start + hlen + n


def is_text(data: bytes) -> bool:
    """UTF-8 text without NUL bytes and with few control characters (in the first 64 KiB)."""
    probe = data[:TEXT_PROBE]
    if b"\x00" in probe:
        return False
    try:
        text = probe.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(probe) - 3:  # not a character cut at the probe's end
            return False
        text = probe[: exc.start].decode("utf-8")
    control = sum(1 for c in text if ord(c) < 32 and c not in "\t\n\r\f\v")
    return control <= len(text) // 100


def code_language(data: bytes) -> str | None:
    """``python`` or ``c`` for text that reads as code whatever its name; None otherwise."""
    probe = data[:TEXT_PROBE]
    if _PYTHON.search(probe):
        return "python"
    if _C.search(probe):
        return "cpp"
    return None


def entropy(data: bytes) -> float:
    """Shannon entropy of the byte values, bits per byte (of the first MiB)."""
    probe = data[: 1 << 20]
    if not probe:
        return 0.0
    n = len(probe)
    return -sum(c / n * math.log2(c / n) for c in Counter(probe).values())


class TooLarge(Exception):
    """A member or a decompressed stream is past the bound it was read under."""


def unpack(kind: str, data: bytes, limit: int, total: int, max_members: int) -> Iterator[tuple[str, bytes]]:
    """Yield the members of an archive one at a time, or the one decompressed stream (``<gzip>`` ...).

    Members are read lazily, so at most one is held at a time (per level of nesting).

    Raises
    ------
    TooLarge
        If a member or the stream is larger than ``limit`` bytes, or the members together pass ``total``
        (nothing past the bound is decompressed).
    ValueError
        If the bytes do not open as ``kind`` (also part-way through).

    """
    try:
        if kind == "zip":
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for info in zf.infolist()[:max_members]:
                    if info.is_dir():
                        continue
                    if info.file_size > min(limit, total):
                        raise TooLarge(info.filename)
                    with zf.open(info) as fh:
                        got = fh.read(limit + 1)  # the declared size may lie: read no further than the bound
                    total -= len(got)
                    if len(got) > limit or total < 0:
                        raise TooLarge(info.filename)
                    yield info.filename, got
        elif kind == "tar":
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
                for n, info in enumerate(tf):
                    if n >= max_members:
                        break
                    if info.isfile():
                        if info.size > min(limit, total):
                            raise TooLarge(info.name)
                        fh = tf.extractfile(info)
                        total -= info.size
                        yield info.name, fh.read(info.size) if fh else b""
        elif kind in ("xz", "lzma"):
            fmt = lzma.FORMAT_XZ if kind == "xz" else lzma.FORMAT_ALONE
            dec = lzma.LZMADecompressor(fmt, memlimit=LZMA_MEMORY)  # a header may ask for 4 GiB
            got = dec.decompress(data, max_length=min(limit, total) + 1)
            if len(got) > min(limit, total):
                raise TooLarge(f"<{kind}>")
            yield f"<{kind}>", got
        else:
            raw = io.BytesIO(data)
            with gzip.GzipFile(fileobj=raw) if kind == "gzip" else bz2.BZ2File(raw) as fh:
                got = fh.read(min(limit, total) + 1)
            if len(got) > min(limit, total):
                raise TooLarge(f"<{kind}>")
            yield f"<{kind}>", got
    except TooLarge:
        raise
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, lzma.LZMAError, zlib.error,
            RuntimeError, NotImplementedError, ValueError, struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"does not open as {kind}: {exc}") from exc
