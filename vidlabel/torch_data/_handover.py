"""How a DataLoader worker's batch tensors pickle for :mod:`vidlabel.torch_data._shm`: the tensor subclass they
share, the mail they carry (:func:`vidlabel.torch_data._shm.post`), small tensors sent by value inside the
message, and batches in one-off shared segments (sent by torch's own descriptor sharing, no copy).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = [
    "_OUTBOX",
    "_ByValueTensor",
    "_HandOverTensor",
    "_OneOffList",
    "_OneOffTensor",
    "_RaggedByValue",
    "_deliver",
    "_take_mail",
    "_view",
]

# what this worker posts, carried by the next tensor of these kinds that it hands over
_OUTBOX: list[tuple[Callable[..., None], tuple[Any, ...]]] = []


def _take_mail() -> list[tuple[Callable[..., None], tuple[Any, ...]]] | None:
    if not _OUTBOX:
        return None
    mail = list(_OUTBOX)
    _OUTBOX.clear()
    return mail


def _deliver(mail: list[tuple[Callable[..., None], tuple[Any, ...]]] | None) -> None:
    for deliver, args in mail or ():
        deliver(*args)


class _HandOverTensor(torch.Tensor):
    """A tensor that pickles its own way when a worker hands it over; anything done to it gives plain tensors."""

    # ops give plain tensors: torch documents this attribute as the way to turn off subclass propagation and
    # has no public name for it (https://pytorch.org/docs/stable/notes/extending.html)
    __torch_function__ = torch._C._disabled_torch_function_impl  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> torch.Tensor:
        return self.as_subclass(torch.Tensor).clone()


class _ByValueTensor(_HandOverTensor):
    """A small tensor that pickles by value (its bytes in the message) instead of through a shared-memory segment."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild_by_value, (self.as_subclass(torch.Tensor).numpy(), _take_mail()))


def _rebuild_by_value(
    array: np.ndarray, mail: list[tuple[Callable[..., None], tuple[Any, ...]]] | None
) -> torch.Tensor:
    _deliver(mail)
    return torch.from_numpy(array)


class _RaggedByValue(list):  # type: ignore[type-arg]
    """A ragged target's per-sample tensors (views of one storage) that pickle as one array and the sizes."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        flat = torch.cat(list(self)) if len(self) else torch.empty(0)
        return (_rebuild_ragged, (flat.numpy(), [int(t.shape[0]) for t in self], _take_mail()))


def _rebuild_ragged(
    flat: np.ndarray, sizes: list[int], mail: list[tuple[Callable[..., None], tuple[Any, ...]]] | None = None
) -> list[torch.Tensor]:
    _deliver(mail)
    return list(torch.split(torch.from_numpy(flat), sizes))


class _OneOffTensor(_HandOverTensor):
    """A worker's batch tensor in a one-off shared segment: pickles as the segment (torch's own file descriptor
    sharing, no copy) and its layout, and unpickles as a plain view of it."""

    _vidlabel_segment: torch.UntypedStorage

    def __reduce_ex__(self, protocol: Any) -> Any:
        layout = (tuple(self.shape), tuple(self.stride()), int(self.storage_offset()), str(self.dtype))
        return (_rebuild_one_off, (self._vidlabel_segment, [layout], False, _take_mail()))


class _OneOffList(list):  # type: ignore[type-arg]
    """A worker's list of tensors over one one-off segment (images of several sizes back to back)."""

    def __init__(self, views: list[torch.Tensor], segment: torch.UntypedStorage) -> None:
        super().__init__(views)
        self._vidlabel_segment = segment

    def __reduce_ex__(self, protocol: Any) -> Any:
        layouts = [(tuple(t.shape), tuple(t.stride()), int(t.storage_offset()), str(t.dtype)) for t in self]
        return (_rebuild_one_off, (self._vidlabel_segment, layouts, True, _take_mail()))


def _rebuild_one_off(
    segment: torch.UntypedStorage, layouts: list[tuple[tuple[int, ...], tuple[int, ...], int, str]], many: bool,
    mail: list[tuple[Callable[..., None], tuple[Any, ...]]] | None,
) -> torch.Tensor | list[torch.Tensor]:  # fmt: skip
    """Unpickle a one-off batch in the receiving process: views of the segment, which lives as long as they do
    (and deliver the mail it carries, :func:`post`)."""
    _deliver(mail)
    flat = torch.empty(0, dtype=torch.uint8).set_(segment)
    views = [_view(flat, layout) for layout in layouts]
    return views if many else views[0]


def _view(flat: torch.Tensor, layout: tuple[tuple[int, ...], tuple[int, ...], int, str]) -> torch.Tensor:
    shape, stride, offset, dtype_name = layout
    return flat.view(getattr(torch, dtype_name.removeprefix("torch."))).as_strided(shape, stride, offset)
