"""Release keys and keyed parameter derivation.

A generator that writes private answers draws every random parameter of an instance from a stream that
is derived from a 256-bit release key and the instance's path::

    digest = HMAC-SHA256(key, "pro/base_eye/E03")  ->  numpy.random.SeedSequence(int(digest))

The key of a held-out release comes from the operating system (:func:`secrets.token_bytes`) and is
written only to ``private/release.key``. Public values (a cornea radius, a source position) are outputs
of the generator; recovering the key from them means inverting HMAC-SHA256 or searching 2^256 keys, so a
participant who has the generator's code and every public file still cannot re-run it to the private
answers. A release built from a small public integer (``--seed``) is a development release: its key is a
hash of that integer, anyone can rebuild its answers, and its manifest says ``answers_rebuildable: true``
so that ranking refuses it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

KEY_BYTES = 32
KEY_FILE = "private/release.key"
_SEED_DOMAIN = b"icl-bench public development seed/"


@dataclass(frozen=True)
class ReleaseKey:
    """A release key and whether its answers can be rebuilt from public information.

    Attributes
    ----------
    secret : bytes
        The 32 key bytes.
    rebuildable : bool
        True for keys made from a public integer seed (development releases).
    seed : int or None
        That seed, for the manifest of a development release.

    """

    secret: bytes
    rebuildable: bool
    seed: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.secret, bytes) or len(self.secret) != KEY_BYTES:
            raise ValueError(f"a release key is {KEY_BYTES} bytes")

    def __repr__(self) -> str:  # never print the secret into logs
        kind = f"seed={self.seed}" if self.rebuildable else "secret"
        return f"ReleaseKey({kind})"

    @classmethod
    def new(cls) -> ReleaseKey:
        """A fresh secret key from the operating system's random source."""
        return cls(secrets.token_bytes(KEY_BYTES), rebuildable=False)

    @classmethod
    def from_seed(cls, seed: int) -> ReleaseKey:
        """The public, rebuildable key of a development release made with ``--seed seed``."""
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        return cls(hashlib.sha256(_SEED_DOMAIN + str(seed).encode()).digest(), rebuildable=True, seed=seed)

    def seed_sequence(self, *path: str | int) -> np.random.SeedSequence:
        """The seed sequence of one named stream: HMAC-SHA256 of the key and ``"/".join(path)``."""
        if not path:
            raise ValueError("a stream needs a name")
        label = "/".join(str(p) for p in path).encode()
        digest = hmac.new(self.secret, label, hashlib.sha256).digest()
        return np.random.SeedSequence(int.from_bytes(digest, "big"))

    def rng(self, *path: str | int) -> np.random.Generator:
        """A NumPy generator on the stream named by ``path``."""
        return np.random.default_rng(self.seed_sequence(*path))

    def manifest_fields(self) -> dict:
        """What a release manifest says of its key (never the key itself)."""
        return {"answers_rebuildable": self.rebuildable, "seed": self.seed,
                "key_id": hashlib.sha256(b"icl-bench key id/" + self.secret).hexdigest()[:16]}


def write_key(release: str | os.PathLike, key: ReleaseKey) -> Path:
    """Store ``key`` as hex in ``release/private/release.key``, readable by its owner only."""
    path = Path(release) / KEY_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(key.secret.hex() + "\n")
    os.chmod(path, 0o600)
    return path


def read_key(release: str | os.PathLike, rebuildable: bool = False, seed: int | None = None) -> ReleaseKey:
    """Read ``release/private/release.key`` (64 hex digits)."""
    path = Path(release) / KEY_FILE
    try:
        text = path.read_text(encoding="ascii").strip()
        secret = bytes.fromhex(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path}: not a release key ({exc})") from None
    if len(secret) != KEY_BYTES:
        raise ValueError(f"{path}: a release key is {2 * KEY_BYTES} hex digits")
    return ReleaseKey(secret, rebuildable=rebuildable, seed=seed)


def release_rankable(release: str | os.PathLike) -> tuple[bool, str]:
    """Whether scores on ``release`` may be ranked, and why: only when its ``manifest.json`` says that its
    answers cannot be rebuilt (``answers_rebuildable: false``). A missing or unreadable manifest is not
    trusted. A development release is still scored, for development, but never ranked.
    """
    from icl.errors import InputError
    from icl.io import load_json

    path = Path(release) / "manifest.json"
    try:
        manifest = load_json(path)
        require_secret(manifest if isinstance(manifest, dict) else {}, str(path))
    except (InputError, ValueError) as exc:
        return False, str(exc)
    return True, "release made with a secret key"


def require_secret(manifest: dict, what: str) -> None:
    """Refuse to rank a release whose answers can be rebuilt from public information."""
    if manifest.get("answers_rebuildable", True):
        raise ValueError(f"{what}: the release's answers can be rebuilt from public information "
                         "(answers_rebuildable is not false); ranking needs a release made with a secret key")
