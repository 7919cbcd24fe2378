"""The tool's private key: the one secret of the course's LTI registration.

`course lms keys` makes an RSA key (2048 bits, RS256 as LTI 1.3 requires) into a file readable
only by its owner (mode 0600, in a folder of mode 0700), never inside the course bundle (which
may be copied or published) or the exchange (which every student can enter). The platform gets
the public half (a JWK with a key id, printed by `course lms config`). Reading the key refuses a
file another account could read or replace: the message says the chmod that fixes it.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from ..paths import ROOT
from .registration import LmsError

BITS = 2048


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError):
        return False


def check_place(path: Path, exchange: Path) -> None:
    """Refuse a key file inside the bundle or the exchange."""
    for folder, what in ((ROOT, "the course bundle (it is copied and may be published)"),
                         (exchange, "the exchange (every student can enter it)")):
        if _inside(path, folder):
            raise LmsError(f"the LMS key file {path} is inside {what}: choose a path outside it with "
                           f"c.LMS.private_key_file (default ~/.config/course-lms/<course id>.pem)")


def generate(path: Path, exchange: Path, replace: bool = False) -> str:
    """Write a new private key to ``path`` (0600; its folder made 0700); returns the public JWK
    (JSON). An existing key is kept unless ``replace`` (the platform must then get the new public key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    check_place(path, exchange)
    if path.exists() and not replace:
        raise LmsError(f"{path} exists already: the platform knows its public key. Say --replace to make a new "
                       f"one (then give the platform the new public key: course lms config)")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=BITS)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    scratch = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never readable by others, not for a moment
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, pem)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(scratch, path)
    return public_jwk(pem.decode())


def load(path: Path, exchange: Path, owner: int | None = None) -> str:
    """The private key (PEM text), after checking its place, owner (``owner``, a uid: default this
    process's; the hub, as root, reads the grader account's key) and mode."""
    check_place(path, exchange)
    try:
        info = path.lstat()
    except FileNotFoundError:
        raise LmsError(f"no LMS key at {path}: make one with `course lms keys` (and give the platform its public "
                       f"key: course lms config)") from None
    if not stat.S_ISREG(info.st_mode):
        raise LmsError(f"the LMS key {path} is not a regular file (a link?): keep the key itself there")
    if info.st_uid != (os.geteuid() if owner is None else owner):
        raise LmsError(f"the LMS key {path} belongs to another account (uid {info.st_uid}): only the account "
                       f"that grades may hold it")
    if info.st_mode & 0o077:
        raise LmsError(f"the LMS key {path} can be read by others (mode {stat.S_IMODE(info.st_mode):04o}): "
                       f"run `chmod 600 {path}`, and make a new key (course lms keys --replace) if anyone "
                       f"may have copied it")
    return path.read_text()


def public_jwk(private_pem: str) -> str:
    """The public half as a JWK (JSON) with alg RS256, use sig, and its RFC 7638 thumbprint as kid."""
    from jwcrypto.jwk import JWK

    key = JWK.from_pem(private_pem.encode())
    public = json.loads(key.export_public())
    public.update(kid=key.thumbprint(), alg="RS256", use="sig")
    return json.dumps(public, sort_keys=True)


def public_key_set(private_pem: str) -> dict:
    """The JWKS the hub serves for the platform: {"keys": [the public JWK]}, nothing private."""
    return {"keys": [json.loads(public_jwk(private_pem))]}


def key_id(private_pem: str) -> str:
    return json.loads(public_jwk(private_pem))["kid"]


def public_pem(private_pem: str) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private_pem.encode(), password=None)
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()
