"""Does a from-scratch submission carry the reference package, or content no scan can read?

Three checks, the first two against the installed ``icl`` package (its Python sources, its C++ sources when
the source tree is beside it, and every file it installs, the compiled ``_core`` included). Content is told
apart by its bytes, never its name (:mod:`icl.sandbox.content`): archives and compressed streams (zip, tar,
gzip, bzip2, xz, lzma) are opened, up to :data:`MAX_NESTING` deep, and their members scanned like files.

file hashes
    Every file or member of at least :data:`MIN_HASH_BYTES` whose SHA-256 equals that of a package file
    (a copied ``_core*.so``, a copied module under any name).
code similarity
    Every code file (by suffix, a ``#!`` line naming Python, or text that reads as Python or C whatever
    its name) is tokenised and fingerprinted with copydetect (MOSS-style winnowing over k-grams of the token
    stream in which every identifier is one letter and every string another, so renaming and reformatting
    leave the fingerprints unchanged). A file is a hit when at least :data:`THRESHOLD` of its fingerprinted
    tokens appear in the reference package (``similarity``), or when it contains at least :data:`THRESHOLD`
    of one reference file (``reference_similarity``: a module pasted into a larger file), and the copied
    stretch is at least :data:`MIN_TOKENS` tokens long. ``docs/pro-harness.md`` gives the measurements
    behind the values.
opaque content
    Compiled code (ELF, PE, Mach-O, WebAssembly, Java classes, Python bytecode), containers no module here
    opens (zstd, 7z, rar), content past the scan's bounds, and binary content of no declared open data
    format once it adds up to :data:`OPAQUE_MIN_BYTES`: nothing can show it free of reference code.

A hit or an opaque file moves the run to the reference-assisted track; the evidence (file pairs,
similarities, hashes, opaque files with their kind) goes into the run record.
"""
from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from zlib import error as zlib_error

from icl.sandbox.content import (
    ARCHIVES,
    DATA_MAGIC,
    OPAQUE_KINDS,
    STREAMS,
    TEXT_PROBE,
    TooLarge,
    code_language,
    entropy,
    sniff,
    unpack,
)
from icl.sandbox.fstree import MAX_TREE_DEPTH, walk
from icl.sandbox.layout import reference_package_entries

#: k-gram length in characters of the filtered token stream (copydetect's noise threshold).
K = 40
#: Winnowing window: every shared stretch of at least K + WINDOW - 1 characters is found.
WINDOW = 8
#: Share of a file's fingerprinted tokens found in the reference that makes it a hit.
THRESHOLD = 0.5
#: Fewest copied characters of the filtered stream that can make a hit (small shims and idioms do not).
MIN_TOKENS = 200
#: k-grams repeating with a period up to this many characters are ignored (tables, repeated statements).
PERIODIC = 12
#: References examined per file for the pair evidence (those sharing the most fingerprints).
PAIRS_EXAMINED = 6
#: Files smaller than this are not compared by hash (empty ``__init__.py`` and the like).
MIN_HASH_BYTES = 256
#: Bounds of the scan: bytes of one code file, bytes of code in all, bytes hashed, entries walked.
MAX_CODE_FILE = 8 * 1024**2
MAX_CODE_TOTAL = 128 * 1024**2
MAX_HASHED = 8 * 1024**3
MAX_ENTRIES = 200_000
#: Containers (archives and compressed streams): most bytes of one member or one decompressed stream (also
#: the largest file read whole), most member bytes read in all, deepest nesting opened.
MAX_MEMBER = 64 * 1024**2
MAX_ARCHIVE = 1024**3
MAX_NESTING = 4
#: Binary content of no declared data format is opaque once the submission holds this many bytes of it.
OPAQUE_MIN_BYTES = 4096
CODE_SUFFIXES = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".pyx": "cython",
    ".pxd": "cython",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
}


@dataclass
class _Print:
    """Fingerprints of one file, as copydetect's ``CodeFingerprint`` holds them, hashed reproducibly.

    copydetect hashes k-grams with Python's ``hash``, salted per process, so the fingerprints the
    winnowing keeps (and the similarities) would change from run to run; here every k-gram gets a fixed
    64-bit hash (:func:`_kgram_hashes`) and copydetect's winnowing, slicing and coverage do the rest.
    """

    filtered_code: str
    k: int
    hashes: set[int]
    hash_idx: dict[int, list[int]]
    token_coverage: int
    all_hashes: Any  # numpy int64, one per k-gram


@dataclass
class _Doc:
    name: str
    fp: _Print


def _language(name: str, head: bytes) -> str | None:
    suffix = os.path.splitext(name)[1].lower()
    if suffix in CODE_SUFFIXES:
        return CODE_SUFFIXES[suffix]
    if head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0]:
        return "python"
    return None


@lru_cache(maxsize=4096)
def _filtered(text: str, language: str) -> str:
    """Copydetect's token stream of ``text``: identifiers as V/F/O, strings as S, layout and comments gone.

    Kept per process by content (the frozen code of a submission is scanned once per run).
    """
    import logging

    from copydetect.utils import filter_code

    logging.getLogger().disabled, was = True, logging.getLogger().disabled  # copydetect warns per file
    try:
        return filter_code(text, "code", language)[0]
    finally:
        logging.getLogger().disabled = was


def _kgram_hashes(doc: str, k: int) -> Any:
    """Hash every k-gram of ``doc`` to a fixed 64 bits: a polynomial hash modulo 2^64, then mixed."""
    import numpy as np

    c = np.frombuffer(doc.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    n = len(c) - k + 1
    if n <= 0:
        return np.zeros(0, np.int64)
    base = np.uint64(0x100000001B3)  # odd, so invertible modulo 2^64
    inv = np.uint64(pow(int(base), -1, 1 << 64))
    with np.errstate(over="ignore"):
        one = np.ones(1, np.uint64)
        powers = np.concatenate([one, np.cumprod(np.full(len(c) - 1, base, np.uint64))])  # base^j
        prefix = np.concatenate([[np.uint64(0)], np.cumsum(c * powers, dtype=np.uint64)])
        inv_powers = np.concatenate([one, np.cumprod(np.full(n - 1, inv, np.uint64))])  # base^-i
        z = (prefix[k : k + n] - prefix[:n]) * inv_powers  # sum of c[i + t] base^t
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)  # splitmix64 finaliser
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return z.view(np.int64)


def _fingerprint(filtered: str) -> _Print:
    """Winnow the k-grams of a filtered token stream (copydetect's robust winnowing)."""
    from copydetect.utils import get_token_coverage, winnow

    all_hashes = _kgram_hashes(filtered, K)
    hash_idx: dict[int, list[int]] = {}
    if len(all_hashes):
        kept, idx = winnow(all_hashes, WINDOW, remove_duplicates=False)
        for h, i in zip(kept.tolist(), idx.tolist(), strict=True):
            hash_idx.setdefault(h, []).append(i)
    coverage = int(get_token_coverage(hash_idx, K, len(filtered))) if hash_idx else 0
    return _Print(filtered, K, set(hash_idx), hash_idx, coverage, all_hashes)


def _cached_filtered(path: str, data: bytes, language: str) -> str:
    """Return :func:`_filtered` of a reference file, kept in the user's cache by content hash.

    Lexing is the slow part: about 7 s for the whole package.
    """
    import platformdirs

    key = hashlib.sha256(data + language.encode()).hexdigest()
    cache = Path(platformdirs.user_cache_dir("icl-bench")) / "provenance" / f"{key}.txt"
    try:
        return cache.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        pass
    text = _filtered(data.decode("utf-8", "replace"), language)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, "utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass
    return text


def _reference_sources() -> list[Path]:
    """Code files of the installed package (and of its C++ sources when the source tree is beside it)."""
    files: list[Path] = []
    for path in reference_package_entries().values():
        p = Path(path)
        if p.is_file():
            files.append(p)
        elif p.is_dir() and p.name != "cases":
            files += [q for q in p.rglob("*") if q.is_file()]
    pkg = Path(reference_package_entries().get("__init__.py", "/nonexistent")).resolve().parent
    for cpp in (pkg / "cpp", pkg.parent.parent / "cpp"):
        if cpp.is_dir():
            files += [q for q in cpp.rglob("*") if q.is_file()]
            break
    return sorted({f for f in files if "__pycache__" not in f.parts})


@lru_cache(maxsize=2)
def _reference(key: tuple[tuple[str, int, int], ...]) -> tuple[list[_Doc], dict[str, str], set[int], dict]:
    """Fingerprints and hashes of the reference files named in ``key`` (path, size, mtime: a cache key)."""
    docs: list[_Doc] = []
    hashes: dict[str, str] = {}
    for path, size, _ in key:
        try:
            data = Path(path).read_bytes()
        except OSError:  # removed since it was listed
            continue
        if size >= MIN_HASH_BYTES:
            hashes[hashlib.sha256(data).hexdigest()] = path
        lang = _language(path, data[:256])
        if lang:
            data = data[:MAX_CODE_FILE]
            docs.append(_Doc(path, _fingerprint(_cached_filtered(path, data, lang))))
    union: set[int] = set()
    periodic: set[int] = set()
    for d in docs:
        union |= d.fp.hashes
        periodic |= _periodic_hashes(d.fp) & d.fp.hashes
    for d in docs:
        d.fp.hashes -= periodic
    return docs, hashes, union - periodic, {}


def _periodic_hashes(fp: _Print, max_period: int = PERIODIC) -> set[int]:
    """Hashes of the k-grams of a file that repeat with a period of at most ``max_period`` characters.

    Tables of literals (``"S":"S",`` over and over once filtered) and runs of the same statement match
    any other table; they say nothing about where code came from.
    """
    import numpy as np

    doc, k = fp.filtered_code, fp.k
    a = np.frombuffer(doc.encode("utf-32-le"), dtype=np.uint32)
    n = len(a) - k + 1
    if n <= 0:
        return set()
    periodic = np.zeros(n, bool)
    for p in range(1, max_period + 1):
        eq = np.concatenate([[0], np.cumsum(a[p:] == a[:-p])])  # eq[j] = matches among the first j pairs
        span = k - p  # a k-gram at i has period p when a[i+t] == a[i+t+p] for t < k - p
        periodic |= (eq[span : span + n] - eq[:n]) == span
    return set(fp.all_hashes[periodic].tolist())


def _reference_now() -> tuple[list[_Doc], dict[str, str], set[int], dict]:
    key = []
    for f in _reference_sources():
        try:
            st = f.stat()
        except OSError:
            continue
        if not f.name.startswith("."):  # editors' and atomic writers' temporary files
            key.append((str(f), st.st_size, st.st_mtime_ns))
    return _reference(tuple(key))


def _copied(fp: Any, shared: set[int]) -> int:
    """Count the filtered characters of ``fp`` covered by fingerprints in ``shared``."""
    import numpy as np
    from copydetect.utils import get_copied_slices

    if not shared:
        return 0
    idx = np.concatenate([np.asarray(fp.hash_idx[h]) for h in shared])
    starts, ends = get_copied_slices(idx, fp.k)
    return int(np.sum(ends - starts))


def compare_code(name: str, text: str, language: str) -> dict[str, Any]:
    """Similarity of one code file to the reference package (see the module docstring)."""
    docs, _, union, _ = _reference_now()
    fp = _fingerprint(_filtered(text, language))
    shared = fp.hashes & union
    copied = _copied(fp, shared)
    coverage = max(fp.token_coverage, 1)
    pairs = []
    if shared:
        # Token counts only for the references sharing the most fingerprints (the evidence shows three).
        overlaps = sorted(((len(fp.hashes & d.fp.hashes), i) for i, d in enumerate(docs)), reverse=True)
        for n, i in overlaps[:PAIRS_EXAMINED]:
            if not n:
                break
            d = docs[i]
            both = fp.hashes & d.fp.hashes
            if both:
                c_sub, c_ref = _copied(fp, both), _copied(d.fp, both)
                pairs.append(
                    {
                        "reference": d.name,
                        "similarity": round(c_sub / coverage, 4),
                        "reference_similarity": round(c_ref / max(d.fp.token_coverage, 1), 4),
                        "copied_tokens": c_sub,
                        "reference_tokens": int(d.fp.token_coverage),
                    }
                )
    pairs.sort(key=lambda p: (-max(p["similarity"], p["reference_similarity"]), p["reference"]))
    sim = copied / coverage
    hit = (sim >= THRESHOLD and copied >= MIN_TOKENS) or any(
        p["reference_similarity"] >= THRESHOLD and p["copied_tokens"] >= MIN_TOKENS for p in pairs
    )
    return {
        "file": name,
        "similarity": round(sim, 4),
        "copied_tokens": copied,
        "tokens": int(fp.token_coverage),
        "hit": bool(hit),
        "pairs": pairs[:3],
    }


class _Scan:
    """One scan's findings and what is left of its bounds."""

    def __init__(self, ref_hashes: dict[str, str]):
        self.ref_hashes = ref_hashes
        self.hash_matches: list[dict[str, str]] = []
        self.code: list[dict[str, Any]] = []
        self.opaque: list[dict[str, Any]] = []
        self.blobs: list[dict[str, Any]] = []
        self.unscanned: list[str] = []
        self.code_budget, self.hash_budget, self.archive_budget = MAX_CODE_TOTAL, MAX_HASHED, MAX_ARCHIVE

    def hashed(self, name: str, digest: str) -> None:
        if digest in self.ref_hashes:
            self.hash_matches.append({"file": name, "reference": self.ref_hashes[digest], "sha256": digest})

    def mark(self, name: str, kind: str, reason: str, size: int) -> None:
        self.opaque.append({"file": name, "kind": kind, "reason": reason, "bytes": size})

    def look(self, name: str, data: bytes, depth: int = 0) -> None:
        """Scan content held in memory: hash it, tell what it is by its bytes, recurse into containers."""
        if len(data) >= MIN_HASH_BYTES:
            self.hashed(name, hashlib.sha256(data).hexdigest())
        kind = sniff(data)
        if kind in ARCHIVES or kind in STREAMS:
            if depth >= MAX_NESTING:
                self.mark(name, kind, f"{kind} nested more than {MAX_NESTING} containers deep: not opened", len(data))
                return
            try:
                for member, mdata in unpack(kind, data, MAX_MEMBER, max(self.archive_budget, 0), MAX_ENTRIES):
                    self.archive_budget -= len(mdata)
                    # A decompressed stream keeps its file's name; an archive member is named after it.
                    self.look(name if kind in STREAMS else f"{name}!{member}", mdata, depth + 1)
            except TooLarge as exc:
                self.mark(name, kind, f"{exc} is past the scan's bound ({MAX_MEMBER} bytes per member, "
                          f"{MAX_ARCHIVE} bytes of members in all): not read", len(data))
            except ValueError as exc:
                self.mark(name, kind, str(exc), len(data))
        elif kind in OPAQUE_KINDS:
            self.mark(name, kind, OPAQUE_KINDS[kind], len(data))
        elif kind == "text":
            lang = _language(name.rsplit("!", 1)[-1], data[:256]) or code_language(data)
            if not lang:
                return
            if len(data) > MAX_CODE_FILE or len(data) > self.code_budget:
                self.unscanned.append(name)
                self.mark(name, "code", f"code past the scan's bounds ({MAX_CODE_FILE} bytes per file, "
                          f"{MAX_CODE_TOTAL} in all): not compared", len(data))
                return
            self.code_budget -= len(data)
            self.code.append(compare_code(name, data.decode("utf-8", "replace"), lang))
        elif kind == "binary":
            self.blobs.append({"file": name, "kind": "binary", "bytes": len(data),
                               "entropy_bits_per_byte": round(entropy(data), 3)})

    def look_large(self, path: Path, name: str, head: bytes, size: int) -> None:
        """A file past :data:`MAX_MEMBER`: a zip is opened member by member, a declared data format is
        recognised by its leading bytes, anything else is opaque."""
        if zipfile.is_zipfile(path):
            try:
                with zipfile.ZipFile(path) as zf:
                    for info in zf.infolist()[:MAX_ENTRIES]:
                        if info.is_dir():
                            continue
                        if info.file_size > min(MAX_MEMBER, self.archive_budget):
                            self.mark(f"{name}!{info.filename}", "zip member", "past the scan's bounds: not read",
                                      info.file_size)
                            continue
                        mdata = zf.read(info)
                        self.archive_budget -= len(mdata)
                        self.look(f"{name}!{info.filename}", mdata, 1)
            except (OSError, zipfile.BadZipFile, RuntimeError, NotImplementedError, zlib_error) as exc:
                self.mark(name, "zip", f"does not open as zip: {exc}", size)
        elif not any(head.startswith(magic) for magic, _ in DATA_MAGIC):
            self.mark(name, sniff(head), f"larger than {MAX_MEMBER} bytes and neither a zip nor a declared "
                      "data format", size)

    def settle_blobs(self) -> None:
        """Binary content of no declared format is opaque once it adds up to :data:`OPAQUE_MIN_BYTES`
        (pieces of a payload cut small count together)."""
        if sum(b["bytes"] for b in self.blobs) >= OPAQUE_MIN_BYTES:
            for b in self.blobs:
                self.opaque.append({**b, "reason": f"binary content of no declared data format (entropy "
                                    f"{b['entropy_bits_per_byte']} bits per byte)"})


def scan_submission(submission: str | os.PathLike) -> dict[str, Any]:
    """Compare every file of ``submission`` with the reference package and find its opaque content.

    Files are told apart by their bytes, never their names (:mod:`icl.sandbox.content`): archives and
    compressed streams are opened and their members scanned in turn (at most :data:`MAX_NESTING` deep),
    text that reads as code is compared whatever its suffix, and compiled code, unopenable containers and
    binary content of no declared data format are opaque.

    Returns
    -------
    dict
        ``hash_matches`` (file, reference, sha256), ``code`` (one :func:`compare_code` row per code file,
        most similar first), ``opaque`` (file, kind, reason, bytes), ``hits`` (files that matched or are
        opaque), ``unscanned`` (files past the scan's bounds), ``parameters`` and ``summary``.

    """
    root = Path(submission)
    docs, ref_hashes, _, _ = _reference_now()
    scan = _Scan(ref_hashes)
    too_deep: list[str] = []
    for n, e in enumerate(walk(root, MAX_TREE_DEPTH, too_deep=too_deep)):
        if n >= MAX_ENTRIES:
            scan.unscanned.append("... (entry limit)")
            scan.mark("...", "tree", f"more than {MAX_ENTRIES} entries: the rest not scanned", 0)
            break
        if not stat.S_ISREG(e.st.st_mode):
            continue
        size = e.st.st_size
        if size > scan.hash_budget:
            scan.unscanned.append(e.rel)
            scan.mark(e.rel, "file", f"past the scan's bound of {MAX_HASHED} bytes hashed: not read", size)
            continue
        scan.hash_budget -= size
        fd = os.open(e.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=e.dir_fd)
        with os.fdopen(fd, "rb") as fh:
            if size <= MAX_MEMBER:
                data = fh.read(MAX_MEMBER + 1)
            else:
                head, h = fh.read(TEXT_PROBE), hashlib.sha256()
                h.update(head)
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
                data = None
        if data is not None:
            scan.look(e.rel, data)
        else:
            scan.hashed(e.rel, h.hexdigest())
            scan.look_large(root / e.rel, e.rel, head, size)
    for rel in too_deep:
        scan.unscanned.append(f"{rel}/ (nested too deep)")
        scan.mark(f"{rel}/", "tree", "folders nested too deep: not scanned", 0)
    scan.settle_blobs()
    code = sorted(scan.code, key=lambda r: (-r["similarity"], r["file"]))
    opaque = sorted(scan.opaque, key=lambda r: r["file"])
    matched = {m["file"] for m in scan.hash_matches} | {r["file"] for r in code if r["hit"]}
    hits = sorted(matched | {o["file"] for o in opaque})
    parts = []
    if matched:
        parts.append(
            f"{len(matched)} file(s) match the reference package: {len(scan.hash_matches)} by SHA-256, "
            f"{sum(r['hit'] for r in code)} by code similarity (threshold {THRESHOLD})"
        )
    if opaque:
        named = ", ".join(f"{o['file']} ({o['kind']})" for o in opaque[:5])
        parts.append(f"{len(opaque)} opaque file(s), content no scan can compare: {named}"
                     + (" ..." if len(opaque) > 5 else ""))
    return {
        "hits": hits,
        "hash_matches": scan.hash_matches,
        "code": code[:50],
        "code_files": len(code),
        "opaque": opaque[:100],
        "unscanned": scan.unscanned[:100],
        "parameters": {
            "k": K,
            "window": WINDOW,
            "threshold": THRESHOLD,
            "min_tokens": MIN_TOKENS,
            "min_hash_bytes": MIN_HASH_BYTES,
            "opaque_min_bytes": OPAQUE_MIN_BYTES,
            "max_nesting": MAX_NESTING,
            "reference_files": len(docs),
        },
        "summary": "; ".join(parts) if parts else "no file matches the reference package and none is opaque",
    }


def scan_runtime(evidence: bytes, output_dir: str | os.PathLike | None = None) -> dict[str, Any]:
    """Look for reference code in what a program left behind: the tar stream of its ``/tmp`` and
    ``/dev/shm`` (members named ``tmp/...``, ``dev/shm/...``) and its OUTPUT.

    Only matches count here (file hashes and code similarity, inside any container): programs write binary
    data at run time, so opaque content is no evidence. A package decoded from data in a declared format
    and written out to be imported is found this way.

    Returns
    -------
    dict
        ``hits``, ``hash_matches``, ``code`` (hits only), ``scanned`` (files) and ``summary``.

    """
    docs, ref_hashes, _, _ = _reference_now()
    scan = _Scan(ref_hashes)
    scanned = 0
    if evidence:
        for member, data in _lenient_tar(evidence):
            scan.look(member, data, 1)
            scanned += 1
    if output_dir is not None and Path(output_dir).is_dir():
        for e in walk(Path(output_dir), MAX_TREE_DEPTH):
            if stat.S_ISREG(e.st.st_mode) and e.st.st_size <= MAX_MEMBER:
                fd = os.open(e.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=e.dir_fd)
                with os.fdopen(fd, "rb") as fh:
                    scan.look(f"OUTPUT/{e.rel}", fh.read(MAX_MEMBER + 1))
                scanned += 1
    code = [r for r in scan.code if r["hit"]]
    hits = sorted({m["file"] for m in scan.hash_matches} | {r["file"] for r in code})
    summary = (
        f"{len(hits)} file(s) written by the program match the reference package: "
        f"{len(scan.hash_matches)} by SHA-256, {len(code)} by code similarity: {', '.join(hits[:5])}"
        + (" ..." if len(hits) > 5 else "")
        if hits
        else "no file written by the program matches the reference package"
    )
    return {"hits": hits, "hash_matches": scan.hash_matches[:100], "code": code[:20], "scanned": scanned,
            "summary": summary}


def _lenient_tar(data: bytes) -> list[tuple[str, bytes]]:
    """Regular members of a tar stream, up to where it ends or breaks (a stream cut at its bound)."""
    import io
    import tarfile

    out: list[tuple[str, bytes]] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|") as tf:
            for info in tf:
                if len(out) >= MAX_ENTRIES:
                    break
                if info.isfile() and info.size <= MAX_MEMBER:
                    fh = tf.extractfile(info)
                    out.append((info.name, fh.read() if fh else b""))
    except (tarfile.TarError, EOFError, OSError):
        pass
    return out


def classify_track(submission: str | os.PathLike) -> tuple[str, dict[str, Any]]:
    """Return the track a submission declared from-scratch counts for, and the evidence.

    Returns
    -------
    tuple of (str, dict)
        ``"reference-assisted"`` when :func:`scan_submission` finds a hit (reference code, or opaque
        content that no scan can show free of it), else ``"from-scratch"``; the scan's report.

    """
    report = scan_submission(submission)
    return ("reference-assisted" if report["hits"] else "from-scratch"), report
