"""vidlabel's environment variables, all of them, and the one rule for reading its on/off switches.

Every ``VIDLABEL_*`` variable vidlabel reads is in :data:`SETTINGS` (``tests/test_house.py`` refuses any other
in the code, scripts and docs); ``docs/reference/environment.md`` describes each, and the process-wide effects
that come with the PyTorch datasets and the export:

- ``VIDLABEL_SHM_POOL``: ``0`` turns off the shared-memory slab pool DataLoader workers hand batches over in
  (``vidlabel.torch_data._shm``), for a container with a small ``/dev/shm``.
- ``VIDLABEL_WORKER``, ``VIDLABEL_NUM_WORKERS``: this process's DataLoader worker number and count, for tests
  and launchers that shard without a DataLoader (``vidlabel.torch_data.worker_info``).
- ``VIDLABEL_MALLOC_TOP_PAD``: bytes of freed memory glibc keeps at the top of the heap in a process that
  decodes frames for a PyTorch dataset or an export (default 64 MiB; ``0`` leaves malloc's settings alone).
- ``VIDLABEL_STORE``: the store ``notebooks/explore.ipynb`` opens.
- ``VIDLABEL_OBJECT_STORE_TIMEOUT_S``, ``VIDLABEL_OBJECT_STORE_TRIES``: the connect and read timeout of every S3
  request (default 10 s) and how many times s3fs tries one (default 2), so a silent endpoint fails in seconds.

On/off switches are read with :func:`env_switch` at each use, not at import, so that DataLoader workers and
tests see the value set then.
"""

from __future__ import annotations

import os
import warnings
from typing import overload

from vidlabel.errors import SwitchValueWarning

__all__ = ["SETTINGS", "env_switch"]

#: Every environment variable vidlabel reads, by name: what it sets.
SETTINGS: dict[str, str] = {
    "VIDLABEL_SHM_POOL": "0 turns off the DataLoader workers' shared-memory slab pool (on by default)",
    "VIDLABEL_WORKER": "this process's DataLoader worker number, overriding torch's",
    "VIDLABEL_NUM_WORKERS": "the DataLoader worker count, overriding torch's",
    "VIDLABEL_MALLOC_TOP_PAD": "bytes of freed heap glibc keeps in a decoding process (64 MiB; 0: malloc untouched)",
    "VIDLABEL_STORE": "the store the exploration notebook opens",
    "VIDLABEL_OBJECT_STORE_TIMEOUT_S": "connect and read timeout of every S3 request, in seconds (10)",
    "VIDLABEL_OBJECT_STORE_TRIES": "how many times s3fs tries one S3 request (2)",
}

_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")
_WARNED: set[tuple[str, str]] = set()


@overload
def env_switch(name: str, default: bool) -> bool: ...
@overload
def env_switch(name: str, default: None) -> bool | None: ...
def env_switch(name: str, default: bool | None) -> bool | None:
    """The switch ``name`` from the environment: True for "1", "true", "yes" or "on", False for "0", "false",
    "no" or "off" (any case, spaces ignored); ``default`` when it is unset, empty or anything else (anything else
    also warns, a :class:`~vidlabel.errors.SwitchValueWarning` (a ``RuntimeWarning`` too), once per value).

    Read at each use, not at import, so a DataLoader worker (fork or spawn) and a test see the value set then.
    """
    raw = os.environ.get(name, "")
    value = raw.strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    if value and (name, raw) not in _WARNED:  # a typo ("O", "of") must not pass for the default unseen
        _WARNED.add((name, raw))
        used = "decided by vidlabel" if default is None else ("on" if default else "off")
        warnings.warn(
            f"{name}={raw!r} is not an on/off value (1, true, yes, on / 0, false, no, off): the switch is {used}",
            SwitchValueWarning,
            stacklevel=2,
        )
    return default
