"""Blind review packets: one per expert check, instance and submission.

A packet carries what a reviewer needs (the check's text and rubric, the task's title and what its
inputs cannot determine, the submission's artifacts for that instance as text) and nothing that names the
submission: packet ids are keyed hashes, packets are sorted by id (so the order mixes submissions), the
submission's name and model name are replaced by ``[submission]`` in every artifact, and the manifest is
left out. Which packet belongs to which submission is written to ``private/identity.json``, kept from the
reviewers.

Layout of a packet folder::

    packets.json               reviewers' copy: {"format", "packets": [...]}
    private/identity.json      packet -> submission, instance, check; the salt of the packet ids
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from icl.errors import InputError
from icl.io import load_json, sha256_file, write_json
from icl.pro.catalog import load_catalog

PACKETS_FORMAT = "icl-review-packets/1"
IDENTITY_FORMAT = "icl-review-identity/1"
TEXT_SUFFIXES = (".json", ".md", ".txt", ".csv")
MAX_TEXT = 64 << 10  # bytes of one artifact shown to a reviewer
MAX_IMAGE = 1 << 20
SUBMISSION_FILES = ("report.md", "model/eye.json")


def packet_id(salt: str, submission: str, instance: str, check: str) -> str:
    """Keyed, order-free id of a packet: nobody without the salt can tell two submissions' packets apart."""
    msg = f"{submission}\x00{instance}\x00{check}".encode()
    return "P-" + hmac.new(bytes.fromhex(salt), msg, hashlib.sha256).hexdigest()[:12]


def _instance_root(run_dir: Path) -> dict[str, Path]:
    """Where each instance's results live: an evaluated run's set outputs, or a plain OUTPUT."""
    from icl.pro.score import load_sets

    sets = load_sets(run_dir)
    if sets is None:
        res = run_dir / "results"
        return {p.name: p for p in sorted(res.iterdir()) if p.is_dir()} if res.is_dir() else {}
    out = {}
    for row in sets:
        if row["record"].get("ok") is True:  # a refused set's tasks score 0; nothing to review
            for iid in row["instances"]:
                p = run_dir / row["output"] / "results" / str(iid)
                if p.is_dir():
                    out[str(iid)] = p
    return out


def _scrub(text: str, names: list[str]) -> str:
    for n in names:
        if len(n) >= 3:
            text = re.sub(re.escape(n), "[submission]", text, flags=re.IGNORECASE)
    return text


def _artifact(path: Path, rel: str, names: list[str]) -> dict | None:
    """One artifact as text (truncated) or, for a PNG, a data URL; other files are listed by size only."""
    if path.is_symlink() or not path.is_file():
        return None
    size = path.stat().st_size
    if path.suffix in TEXT_SUFFIXES:
        with open(path, "rb") as f:
            data = f.read(MAX_TEXT)
        return {
            "name": rel,
            "kind": "text",
            "bytes": size,
            "truncated": size > MAX_TEXT,
            "text": _scrub(data.decode("utf-8", "replace"), names),
        }
    if path.suffix == ".png" and size <= MAX_IMAGE:
        data = path.read_bytes()
        if data[:8] == b"\x89PNG\r\n\x1a\n":
            return {
                "name": rel,
                "kind": "image",
                "bytes": size,
                "data_url": "data:image/png;base64," + base64.b64encode(data).decode(),
            }
    return {"name": rel, "kind": "binary", "bytes": size, "sha256": sha256_file(path)}


def _identity_names(name: str, submission: Path | None) -> list[str]:
    names = [name]
    if submission is not None and (submission / "manifest.json").is_file():
        try:
            model = load_json(submission / "manifest.json").get("model", {})
            names += [str(model.get("name", ""))]
        except (InputError, AttributeError):
            pass
    return sorted({n for n in names if n}, key=len, reverse=True)


def make_packets(
    release: str | os.PathLike,
    runs: Mapping[str, str | os.PathLike],
    output: str | os.PathLike,
    split: str = "test",
    submissions: Mapping[str, str | os.PathLike] | None = None,
    salt: str | None = None,
) -> dict:
    """Write blind packets for every expert check of every instance each run answered.

    Parameters
    ----------
    release
        The professional release (catalogue, inputs, ``private/splits.json``).
    runs
        Submission name -> run folder (a plain OUTPUT or an evaluated run with ``sets.json``).
    output
        Packet folder to write (``packets.json`` and ``private/identity.json``).
    split
        Split whose instances are reviewed.
    submissions
        Submission name -> submission folder, for its ``report.md`` and ``model/eye.json``.
    salt
        Hex key of the packet ids (drawn at random when None; fixed only for reproducible tests).

    Returns
    -------
    dict
        ``{"packets": n, "submissions": k, "checks": m}``.

    """
    release, output = Path(release), Path(output)
    catalog = load_catalog(release / "catalog.json")
    salt = salt or secrets.token_hex(16)
    rows = [r for r in load_json(release / "private" / "splits.json")["instances"] if r["split"] == split]
    packets, identity = [], {}
    for name, run in sorted(runs.items()):
        sub = Path(submissions[name]) if submissions and name in submissions else None
        names = _identity_names(name, sub)
        roots = _instance_root(Path(run))
        shared = [
            a for rel in SUBMISSION_FILES if sub is not None and (a := _artifact(sub / rel, rel, names))
        ]
        for row in rows:
            iid = row["id"]
            if iid not in roots:
                continue  # an unanswered or refused task scores 0 without review
            tpl = catalog.template(row["template"])
            task = load_json(release / "inputs" / split / iid / "task.json")
            arts = list(shared)
            root = roots[iid]
            for p in sorted(root.rglob("*")):
                if (a := _artifact(p, p.relative_to(root).as_posix(), names)) is not None:
                    arts.append(a)
            for ch in tpl.checks:
                if ch.mode != "expert":
                    continue
                pid = packet_id(salt, name, iid, ch.id)
                identity[pid] = {"submission": name, "instance": iid, "check": ch.id}
                packets.append(
                    {
                        "packet": pid,
                        "template": tpl.id,
                        "title": tpl.title,
                        "check": ch.id,
                        "text": ch.text,
                        "rubric": dict(ch.rubric),
                        "undeterminable": list(task.get("undeterminable", [])),
                        "artifacts": arts,
                    }
                )
    packets.sort(key=lambda p: p["packet"])
    write_json(output / "packets.json", {"format": PACKETS_FORMAT, "split": split, "packets": packets})
    write_json(
        output / "private" / "identity.json",
        {"format": IDENTITY_FORMAT, "salt": salt, "release": str(release.resolve()), "packets": identity},
    )
    return {"packets": len(packets), "submissions": len(runs), "checks": len({p["check"] for p in packets})}


def load_packets(folder: str | os.PathLike) -> tuple[list[dict], dict[str, dict]]:
    """Packets and identity map of a packet folder, checked against each other."""
    folder = Path(folder)
    doc = load_json(folder / "packets.json")
    if (
        not isinstance(doc, dict)
        or doc.get("format") != PACKETS_FORMAT
        or not isinstance(doc.get("packets"), list)
    ):
        raise InputError(
            f"expected format {PACKETS_FORMAT} with a packets list", str(folder / "packets.json"), "format"
        )
    ident = load_json(folder / "private" / "identity.json")
    idfile = str(folder / "private" / "identity.json")
    if (
        not isinstance(ident, dict)
        or ident.get("format") != IDENTITY_FORMAT
        or not isinstance(ident.get("packets"), dict)
    ):
        raise InputError(f"expected format {IDENTITY_FORMAT}", idfile, "format")
    ids = {p.get("packet") for p in doc["packets"] if isinstance(p, dict)}
    if ids != set(ident["packets"]):
        raise InputError("packet ids differ from packets.json", idfile, "packets")
    return doc["packets"], ident["packets"]
