"""vidlabel's environment switches: on/off ones (``VIDLABEL_SHM_POOL``, ``VIDLABEL_HDF5_DIRECT_WRITE``,
``VIDLABEL_EXPORT_FRAME_THREADS``) and ones naming a choice (``VIDLABEL_FIRST_TOUCH``): one rule for reading them."""

from __future__ import annotations

import os
import warnings
from typing import overload

from vidlabel.errors import SwitchValueWarning

__all__ = ["env_choice", "env_switch"]

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


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """The choice ``name`` names in the environment, one of ``choices`` (any case, spaces ignored); ``default`` when
    it is unset or empty, and when it names none of them (which also warns, a
    :class:`~vidlabel.errors.SwitchValueWarning`, once per value). Read at each use, as :func:`env_switch`."""
    raw = os.environ.get(name, "")
    value = raw.strip().lower()
    if value in choices:
        return value
    if value and (name, raw) not in _WARNED:
        _WARNED.add((name, raw))
        warnings.warn(
            f"{name}={raw!r} is not one of {', '.join(choices)}: {default!r} is used",
            SwitchValueWarning,
            stacklevel=2,
        )
    return default
