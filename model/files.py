"""Files in and out by one set of rules, for every tool and the checkpoint: bounded reads, atomic writes, strict JSON.

- A read takes at most MAX_INPUT_BYTES (after decompression, for .gz): past that, InputError saying the limit.
  A gzip bomb (a few kilobytes that inflate to gigabytes) stops at the limit instead of filling the memory.
- Text is UTF-8: `read_text` names the file and the byte offset of the first byte that is not.
- A write goes to a temporary file in the target's folder, moved onto the target by os.replace once it is
  complete: a reader finds the old file or the new one, never half of one. If the write fails (an error,
  a full disk, Ctrl-C), the temporary file is removed. A target that exists must be a regular file: os.replace
  would put a file in place of a symbolic link, a named pipe or a device (/dev/stdout) instead of writing to it.
- JSON read from a file is parsed by `loads`: anything it cannot read is an InputError, never a RecursionError.
- JSON has no NaN or Infinity (RFC 8259; Python's json writes them unless told not to): `dumps` writes null in
  their place, so that every JSON reader can read what a tool wrote.

No torch here: model/head_stats.py and model/cli.py import this module and stay light.
"""

import json
import math
import os
import secrets
import stat
from contextlib import contextmanager
from pathlib import Path

from .errors import InputError

MAX_INPUT_BYTES = 50_000_000  # 50 MB per input (decompressed): Multi30k's training split is 2 MB a side


def read_limited(f, name: str) -> bytes:
    """All of a binary stream, up to MAX_INPUT_BYTES; InputError naming `name` and the limit past that.

    Reads one byte more than the limit, never the whole stream: a gzip stream decompresses only that far.
    """
    data = f.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{name} is larger than the input limit of {MAX_INPUT_BYTES // 1_000_000} MB "
                         f"(decompressed): split it into smaller files")
    return data


def read_text(path) -> str:
    """A UTF-8 text file, up to MAX_INPUT_BYTES; InputError when it is not UTF-8, naming the first bad byte."""
    with open(path, "rb") as f:
        data = read_limited(f, str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path} is not UTF-8 text (byte 0x{data[e.start]:02x} at byte {e.start + 1}): "
                         "save the file as UTF-8") from None


# What os.replace would replace instead of writing to, by its stat mode (os.lstat: a link is not followed). A folder
# is not here: os.replace refuses it itself (IsADirectoryError), and nothing is lost.
_NOT_REGULAR = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a named pipe"),
                (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def check_target(path):
    """InputError when `path` is a symbolic link, a named pipe, a device or a socket: an output replaces a file
    (or nothing), never one of these."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    for test, kind in _NOT_REGULAR:
        if test(mode):
            raise InputError(f"cannot write {path}: it is {kind}; --out must be a regular file's path or a new one")


def check_output(path) -> Path:
    """`path` as a Path, once it is known that an output can go there: InputError when its folder does not exist
    or it is not a regular file (check_target). Tools call it before their long work, not after it."""
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"cannot write {path}: the folder {path.parent} does not exist")
    check_target(path)
    return path


@contextmanager
def replacing(path):
    """A temporary path beside `path` to write to: moved onto `path` when the block ends, removed if it fails.

        with replacing(out) as tmp:
            save_file(state, tmp)

    The name is new (a random part), so a reader of `path` never sees it half written, and two writers of the
    same file never share one. InputError before anything is written when `path` is not a regular file
    (check_target).
    """
    path = Path(path)
    check_target(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:  # Ctrl-C too: no temporary file is left behind
        tmp.unlink(missing_ok=True)
        raise


def write_text(path, text: str):
    """Write UTF-8 text to `path` atomically (replacing)."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def loads(text: str | bytes, where: str):
    """json.loads; InputError naming `where` for text that is not JSON, or nested too deeply to read."""
    try:
        return json.loads(text)
    except ValueError as e:  # not JSON, not UTF-8, or a number of more than 4,300 digits
        raise InputError(f"{where}: not JSON ({getattr(e, 'msg', e)})") from None
    except RecursionError:  # the parser recurses once per level: "[[[[..." a few thousand deep
        raise InputError(f"{where}: nested too deeply to read") from None


def dumps(obj, **kwargs) -> str:
    """json.dumps, with null for every float that is NaN or infinite (JSON has no such numbers)."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError:  # a NaN or infinity somewhere: the walk below costs a pass, so only when needed
        return json.dumps(_finite(obj), allow_nan=False, **kwargs)


def _finite(obj):
    """obj with each NaN or infinite float (NumPy's float64 included: a float) as None."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def sha256(path) -> str:
    """The sha256 hex digest of a file, read in 1 MiB chunks."""
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
