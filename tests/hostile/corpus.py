"""Hostile input files, generated on demand (nothing binary is committed).

Each builder writes one file (or link) into a folder and returns its path. A pickle payload would
create ``MARKER`` in the folder if it were ever unpickled.
"""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np

MARKER = "UNPICKLED_MARKER"


class _Payload:
    """Unpickling this object runs ``open(marker, 'w')``."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    return buf.getvalue()


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def pickle_payload(folder: Path, name: str, keys: list[str]) -> Path:
    """An npz whose first key is an object array holding a pickle payload."""
    obj = np.empty(1, dtype=object)
    obj[0] = _Payload(str(folder / MARKER))
    members = {f"{k}.npy": _npy_bytes(np.zeros((2, 2))) for k in keys[1:]}
    members[f"{keys[0]}.npy"] = _npy_bytes(obj)
    return _zip(folder / name, members)


def raw_pickle(folder: Path, name: str) -> Path:
    """A file that is a bare pickle, not an npz."""
    (folder / name).write_bytes(pickle.dumps(_Payload(str(folder / MARKER))))
    return folder / name


def zip_bomb(folder: Path, name: str, key: str, declared_gib: int = 8, others: tuple[str, ...] = ()) -> Path:
    """An npz whose member ``key`` holds 64 MiB of zeros (~64 KiB compressed) behind a header that
    promises ``declared_gib`` GiB; ``others`` are small valid members."""
    n = declared_gib * (1 << 30) // 8
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (n,)})
    with zipfile.ZipFile(folder / name, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        with zf.open(f"{key}.npy", "w", force_zip64=True) as fh:
            fh.write(header.getvalue())
            chunk = b"\0" * (1 << 20)
            for _ in range(64):
                fh.write(chunk)
        for other in others:
            zf.writestr(f"{other}.npy", _npy_bytes(np.zeros((2, 2))))
    return folder / name


def arrays_npz(folder: Path, name: str, **arrays: np.ndarray) -> Path:
    """A plain npz (for wrong shapes, dtypes, NaN/Inf, negatives, missing or extra keys)."""
    return _zip(folder / name, {f"{k}.npy": _npy_bytes(np.asarray(v)) for k, v in arrays.items()})


def outside_symlink(folder: Path, name: str, target: Path) -> Path:
    """A symbolic link pointing outside the folder."""
    link = folder / name
    os.symlink(target, link)
    return link


def json_text(folder: Path, name: str, text: str | bytes) -> Path:
    """A JSON file with the given text (malformed, deep, huge numbers, non-UTF-8...)."""
    path = folder / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


DEEP_JSON = "[" * 100000 + "]" * 100000
HUGE_NUMBER_JSON = '{"x": 1' + "0" * 5000 + "}"
NAN_JSON = '{"x": NaN}'
NON_UTF8 = b'{"x": "\xff\xfe"}'
MALFORMED_JSON = '{"x": [1, 2,}'


def corrupt_crc(folder: Path, name: str, **arrays: np.ndarray) -> Path:
    """A well-formed npz whose first member's data has one byte changed: the CRC no longer matches."""
    path = arrays_npz(folder, name, **arrays)
    raw = bytearray(path.read_bytes())
    first = next(iter(arrays))
    start = raw.index(b"\x93NUMPY")  # stored (not deflated): the .npy bytes sit in the archive as-is
    raw[start + len(_npy_bytes(np.asarray(arrays[first]))) - 1] ^= 0xFF
    path.write_bytes(bytes(raw))
    return path


def corrupt_deflate(folder: Path, name: str, key: str, others: tuple[str, ...] = ()) -> Path:
    """An npz whose deflated member ``key`` (written first) is damaged in the middle; ``others`` are valid."""
    data = _npy_bytes(np.random.default_rng(0).random((64, 64)))
    with zipfile.ZipFile(folder / name, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{key}.npy", data)
        for other in others:
            zf.writestr(f"{other}.npy", _npy_bytes(np.zeros((2, 2))))
    raw = bytearray((folder / name).read_bytes())
    for k in range(200, 400):
        raw[k] ^= 0x55
    (folder / name).write_bytes(bytes(raw))
    return folder / name


def encrypted_flag(folder: Path, name: str, key: str, others: tuple[str, ...] = ()) -> Path:
    """An npz whose member ``key`` (written first) claims to be encrypted (general-purpose flag bit 0)."""
    members = {f"{key}.npy": _npy_bytes(np.zeros(4))}
    members.update({f"{o}.npy": _npy_bytes(np.zeros((2, 2))) for o in others})
    path = _zip(folder / name, members)
    raw = bytearray(path.read_bytes())
    for sig, off in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # local and central headers
        i = raw.index(sig)
        raw[i + off] |= 1
    path.write_bytes(bytes(raw))
    return path


def absurd_shape(folder: Path, name: str, key: str, shape: tuple[int, ...] = (10**9, 10**9),
                 others: tuple[str, ...] = ()) -> Path:
    """An npz whose member header declares an absurd shape over 8 bytes of data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": shape})
    members = {f"{key}.npy": header.getvalue() + b"\0" * 8}
    members.update({f"{o}.npy": _npy_bytes(np.zeros((2, 2))) for o in others})
    return _zip(folder / name, members)


def traversal_member(folder: Path, name: str, key: str) -> Path:
    """An npz with a member named ``../<key>.npy`` (extracting it would leave the folder)."""
    member = _npy_bytes(np.zeros(4))
    return _zip(folder / name, {f"../{key}.npy": member, f"{key}.npy": member})


def fifo(folder: Path, name: str) -> Path:
    """A named pipe: opening it for reading blocks until a writer appears."""
    os.mkfifo(folder / name)
    return folder / name


def device_link(folder: Path, name: str, device: str = "/dev/zero") -> Path:
    """A symbolic link to a device that never ends."""
    return outside_symlink(folder, name, Path(device))


HUGE_INT_JSON = '{"x": 1' + "0" * 400 + "}"  # under the parser's digit limit, beyond a double
