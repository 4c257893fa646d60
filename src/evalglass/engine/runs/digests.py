"""``digests.json``: the SHA-256 of every artifact a run wrote, optionally signed with Ed25519.

It is written last, after every other file of the run folder, and lists every regular file in the folder except
itself (so it never has to cover its own bytes). ``verify`` checks each file against it, names files that are
missing, and says which were added after the run (a JUnit report written into the folder is not an edit). On
its own this proves only that the folder was not edited piecemeal: whoever can write the
folder can rewrite the digests too. A signature closes that: with ``EVALGLASS_SIGNING_KEY`` (an Ed25519 private
key) in the environment, ``run`` signs the list, and ``verify --key`` (the public key) checks it, so a consistent
rewrite of scores, run record, scorecard and digests together is caught as well.

A signed list also carries the git branch and commit the run was made on (``provenance``, inside what is signed):
a baseline the ledger approves as "the newest run of main signed by this key" is judged by the branch its signer
saw, never by a database column or a folder name anyone with write access could change. A key is named by its
fingerprint (:func:`key_fingerprint`: ``sha256:`` over the raw 32-byte public key).

Why Ed25519 and not an HMAC: checking an HMAC needs the very key that makes one, so every verifier (a reviewer, a
later CI job, anyone handed the artifacts) could also forge. With Ed25519 the public key can sit in the repository
for anyone to verify with, while the private key lives only in the CI secret store of the jobs trusted to sign
(for example runs on the protected branch; a pull request from a fork never sees it).
"""

# No `from __future__ import annotations`: pydantic would compile each field's annotation text at class creation
# (a ForwardRef, ~75 k instructions a field on every run that imports this module).

import base64
import binascii
import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from evalglass.core.fingerprint import PREFIX, canonical_json
from evalglass.engine.runs.artifacts import load_json_model
from evalglass.errors import SetupError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

DIGESTS_FILE = "digests.json"
SIGNING_KEY_ENV = "EVALGLASS_SIGNING_KEY"
VERIFY_KEY_ENV = "EVALGLASS_VERIFY_KEY"
NOT_LISTED = "<not listed>"


class Signature(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    algorithm: Literal["ed25519"] = "ed25519"
    public_key: str = Field(description="Hex of the raw public key that checks this signature (informational).")
    value: str = Field(description="Base64 of the Ed25519 signature over the canonical JSON of run_id and files.")


class SignedProvenance(BaseModel):
    """Where the signer made the run: signed with the digests, so it is the signer's word, not a recorder's."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    git_branch: str | None = None
    git_commit: str | None = None


class Digests(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    schema_version: Literal["evalglass.digests/1"] = "evalglass.digests/1"
    run_id: str
    files: dict[str, str] = Field(description="Every other file of the run folder, by name: its SHA-256.")
    provenance: SignedProvenance | None = Field(
        default=None, description="Signed runs: the git branch and commit the run was made on (signed too)."
    )
    signature: Signature | None = None

    def signed_bytes(self) -> bytes:
        signed: dict[str, Any] = {"schema_version": self.schema_version, "run_id": self.run_id, "files": self.files}
        if self.provenance is not None:  # absent from lists signed before it existed: their bytes are unchanged
            signed["provenance"] = self.provenance.model_dump(mode="json")
        return canonical_json(signed)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return PREFIX + digest.hexdigest()


def artifact_names(folder: Path) -> list[str]:
    """The files a digest list covers: every visible file of the folder and its visible subfolders (such as the
    baseline copies under ``baselines/``), by relative POSIX path, but the list itself. Symbolic links are not
    followed, so a link can neither pull an outside file in nor hide one."""
    return sorted(iter_artifact_names(folder))


def iter_artifact_names(folder: Path) -> Iterator[str]:
    """:func:`artifact_names` unsorted and one at a time, so a caller that needs only the first few (is a folder
    empty?) does not walk a whole tree: ``run --out ~`` walked the home folder, ``--out /`` the machine."""
    pending = [(folder, "")]
    while pending:
        current, prefix = pending.pop()
        for entry in current.iterdir():
            if entry.name.startswith(".") or (not prefix and entry.name == DIGESTS_FILE):
                continue
            if entry.is_dir() and not entry.is_symlink():
                pending.append((entry, f"{prefix}{entry.name}/"))
            else:
                yield prefix + entry.name


def digests_of(
    folder: Path,
    run_id: str,
    signing_key: str | None,
    known: dict[str, str] | None = None,
    provenance: SignedProvenance | None = None,
    pending: dict[str, str] | None = None,
) -> Digests:
    """The run's digest list (``DIGESTS_FILE``), to be written last. ``known`` holds digests already computed while
    the file was written (the scores file is hashed as it streams out), so a large file is not read a second time.
    ``provenance`` is kept (and signed) only with a signature: unsigned, it would be anyone's word. ``pending``:
    files written but not yet renamed into the folder (committed together with the list,
    ``runfolder.commit_together``), by name, with their digests; listed as if they were in the folder already."""
    pending = pending or {}
    hashes = {**(known or {}), **pending}
    files = {
        name: hashes.get(name) or file_sha256(folder / name)
        for name in sorted({*artifact_names(folder), *pending})
        if name in pending or ((folder / name).is_file() and not (folder / name).is_symlink())
    }
    digests = Digests(run_id=run_id, files=files, provenance=provenance if signing_key is not None else None)
    if signing_key is not None:
        key = private_key(signing_key)
        signature = key.sign(digests.signed_bytes())
        digests = digests.model_copy(
            update={
                "signature": Signature(
                    public_key=_raw_public(key.public_key()).hex(), value=base64.b64encode(signature).decode()
                )
            }
        )
    return digests


def load_digests(folder: Path) -> Digests | None:
    path = folder / DIGESTS_FILE
    if not path.exists():
        return None
    loaded: Digests = load_json_model(path, Digests, "digest list")
    return loaded


def signature_valid(digests: Digests, public_key_text: str) -> bool:
    from cryptography.exceptions import InvalidSignature

    key = public_key(public_key_text)  # first: a key that is no key is exit 2 even for an unsigned run
    if digests.signature is None:
        return False
    try:
        key.verify(base64.b64decode(digests.signature.value, validate=True), digests.signed_bytes())
    except (InvalidSignature, binascii.Error, ValueError):
        return False
    return True


def key_fingerprint(public_key_text: str) -> str:
    """How a ledger names a public key: ``sha256:`` and the hex SHA-256 of its raw 32 bytes (from PEM text, a file
    holding it, or 64 hex digits)."""
    return _raw_fingerprint(_raw_public(public_key(public_key_text)))


def _raw_fingerprint(raw: bytes) -> str:
    return PREFIX + hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class SignatureCheck:
    """What a digest list's signature proves, checked with the public key it carries: ``signer`` is that key's
    fingerprint when the signature verifies (whether the key is one to trust is the ledger's question)."""

    valid: bool
    signer: str | None = None
    problem: str | None = None


def check_own_signature(digests: Digests) -> SignatureCheck:
    """Verify the signature with the public key written beside it; a list without one is not valid (no problem)."""
    from cryptography.exceptions import InvalidSignature

    if digests.signature is None:
        return SignatureCheck(valid=False)
    ed25519, _ = _crypto()
    try:
        raw = bytes.fromhex(digests.signature.public_key)
        key = ed25519.Ed25519PublicKey.from_public_bytes(raw)
        key.verify(base64.b64decode(digests.signature.value, validate=True), digests.signed_bytes())
    except (InvalidSignature, binascii.Error, ValueError):
        return SignatureCheck(valid=False, problem="the signature does not verify")
    return SignatureCheck(valid=True, signer=_raw_fingerprint(raw))


def signing_key_from_env() -> str | None:
    value = os.environ.get(SIGNING_KEY_ENV, "").strip()
    return value or None


def verify_key_from_env() -> str | None:
    """The public key to check signatures with: EVALGLASS_VERIFY_KEY, else the one EVALGLASS_SIGNING_KEY implies."""
    value = os.environ.get(VERIFY_KEY_ENV, "").strip()
    if value:
        return value
    signing = signing_key_from_env()
    return None if signing is None else _raw_public(private_key(signing).public_key()).hex()


def private_key(text: str) -> "Ed25519PrivateKey":
    """An Ed25519 private key from PEM text (PKCS#8, as `openssl genpkey -algorithm ed25519` writes) or 64 hex
    digits (the raw 32-byte seed)."""
    ed25519, serialization = _crypto()
    key = _ed25519_key(
        text.strip(),
        lambda pem: serialization.load_pem_private_key(pem, password=None),
        ed25519.Ed25519PrivateKey,
        f"{SIGNING_KEY_ENV} is not an Ed25519 private key",
        "set it to a PEM private key (openssl genpkey -algorithm ed25519) or 64 hex digits",
    )
    return cast("Ed25519PrivateKey", key)


def public_key(text: str) -> "Ed25519PublicKey":
    """An Ed25519 public key from PEM text, a file holding it, or 64 hex digits (the raw key)."""
    ed25519, serialization = _crypto()
    candidate = text.strip()
    if "-----BEGIN" not in candidate and not _is_hex(candidate):
        from evalglass.readers.userfiles import read_regular

        # Only a regular file, and never a traceback for one that is not text: a FIFO hung this read, and a binary
        # file (a DER key, a private key's raw bytes) ended as "internal error: UnicodeDecodeError".
        raw = read_regular(
            Path(candidate),
            what="public key file",
            limit=1 << 20,
            missing_fix="pass a PEM public key (openssl pkey -pubout), a file holding one, or 64 hex digits",
        )
        where: str | None = candidate
        candidate = raw.decode("utf-8", "replace").strip()
        if "-----BEGIN" not in candidate and not _is_hex(candidate):
            # Said of the file, not of hex parsing at "position 0": the line names the file the user gave.
            binary = "\ufffd" in candidate or "\x00" in candidate
            raise SetupError(
                "the verify key file holds "
                + ("binary bytes, not a PEM public key" if binary else "neither a PEM public key nor 64 hex digits"),
                where=where,
                fix="convert a DER key with `openssl pkey -pubin -inform DER -in KEY -pubout`, or pass a PEM public "
                "key file or 64 hex digits"
                if binary
                else "pass a PEM public key (openssl pkey -pubout), a file holding one, or 64 hex digits",
            )
    else:
        where = None
    key = _ed25519_key(
        candidate,
        serialization.load_pem_public_key,
        ed25519.Ed25519PublicKey,
        "the verify key is not an Ed25519 public key",
        "pass a PEM public key (openssl pkey -pubout), a file holding one, or 64 hex digits",
        where=where,
    )
    return cast("Ed25519PublicKey", key)


def _ed25519_key(
    text: str, load_pem: Callable[[bytes], Any], kind: Any, what: str, fix: str, *, where: str | None = None
) -> Any:
    """``kind`` (a private or public Ed25519 key class) from PEM or from hex of its raw bytes, or one line (naming
    ``where``, the file the text was read from)."""
    try:
        if "-----BEGIN" in text:
            key = load_pem(text.encode())
            if not isinstance(key, kind):
                raise ValueError("not an Ed25519 key")
            return key
        raw = bytes.fromhex(text)
        return kind.from_private_bytes(raw) if hasattr(kind, "from_private_bytes") else kind.from_public_bytes(raw)
    except ValueError as exc:
        raise SetupError(f"{what} ({exc})", where=where, fix=fix) from None


def _is_hex(text: str) -> bool:
    return len(text) == 64 and all(char in "0123456789abcdefABCDEF" for char in text)


def _raw_public(key: "Ed25519PublicKey") -> bytes:
    _, serialization = _crypto()
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _crypto() -> tuple[Any, Any]:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        from evalglass.dependencies import install_hint

        raise SetupError(
            "signing and checking signatures needs the `cryptography` package", fix=install_hint("cryptography")
        ) from None
    return ed25519, serialization
