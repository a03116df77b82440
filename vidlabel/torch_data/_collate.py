"""Samples for PyTorch: the one converter (NumPy to tensors) and the one collate, for frame and clip samples.

What each key becomes follows from its layout in the sample schemas
(:func:`vidlabel.schema.key_layouts`), so a key added to a schema is
converted and batched with no change here:

- an ``"image"`` key: (..., H, W, 3) uint8 becomes a (..., 3, H, W) tensor
  that shares memory with the decoded frames (a channels-last view, no
  copy); a batch stacks such views into (B, ..., 3, H, W) with one copy;
- a ``"ragged"`` key (first dimension differs between samples): a batch
  keeps one tensor per sample (views of one storage), and a clip's
  per-frame list one list of T tensors per sample;
- any other array: a tensor of the same shape, stacked in a batch when the
  shapes agree; ints and floats become a (B,) tensor, strings and None a list.

In a DataLoader worker, images go into reusable shared-memory slabs and
small tensors travel by value inside the message
(:mod:`vidlabel.torch_data._shm`): the main process receives plain tensors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from vidlabel.errors import OptionError
from vidlabel.schema import key_layouts, schema_of
from vidlabel.torch_data._shm import by_value, ragged_by_value, slab_of, take_slab

__all__ = ["EXTRA_RAGGED_KEYS", "collate_clips", "collate_frames", "to_torch_clip", "to_torch_sample"]

#: Per-region keys outside the schemas that transforms add (batched as lists, as the ragged keys are).
EXTRA_RAGGED_KEYS: frozenset[str] = frozenset({"confidences"})


def _tensor(arr: np.ndarray) -> torch.Tensor:
    # from_numpy shares memory; copy read-only or non-native arrays (torch warns on read-only ones).
    if not arr.flags.writeable or not arr.flags.c_contiguous or not arr.dtype.isnative:
        arr = np.array(arr, order="C")
    return torch.from_numpy(arr)


def _convert(key: str, value: Any, images: frozenset[str], ragged: frozenset[str]) -> Any:
    """One value of a sample for PyTorch (see the module docstring); anything but an array, or a ragged key's
    list of arrays, as it is."""
    if isinstance(value, np.ndarray):
        if key in images and value.ndim >= 3:
            return _tensor(value).movedim(-1, -3)
        return _tensor(value)
    if isinstance(value, list) and key in ragged:
        return [_tensor(v) if isinstance(v, np.ndarray) else v for v in value]
    return value


def to_torch_sample(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A NumPy sample dict, frame or clip, as tensors.

    ``image`` (H, W, 3) uint8, or a clip's (T, H, W, 3), becomes a (3, H, W)
    (or (T, 3, H, W)) uint8 tensor that shares memory with the decoded frames:
    a channels-last view, no copy. Call ``.contiguous()`` if an operation
    needs channels-first memory; :func:`collate_frames` batches such views
    into one channels-last batch with one copy. A clip's per-frame targets
    become lists of T tensors; every other array a tensor of the same shape
    and dtype; strings, ints and None are kept as they are.

    Parameters
    ----------
    sample : dict
        A frame sample (:data:`vidlabel.schema.FRAME`) or a clip sample (:data:`vidlabel.schema.CLIP`).

    Returns
    -------
    dict
        The same keys, arrays as tensors.
    """
    images, ragged = key_layouts()
    return {key: _convert(key, value, images, ragged) for key, value in sample.items()}


def to_torch_clip(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A NumPy clip sample as tensors: :func:`to_torch_sample`, which converts frame and clip samples alike.

    Parameters
    ----------
    sample : dict
        A clip sample (:data:`vidlabel.schema.CLIP`) as :class:`~vidlabel.samples.ClipSamples` gives it.

    Returns
    -------
    dict
        The same keys: ``image`` a (T, 3, H, W) uint8 view, per-frame targets lists of T tensors.
    """
    return to_torch_sample(sample)


def _channels_last_view(t: torch.Tensor) -> bool:
    # A (..., C, H, W) CPU tensor whose memory is a C-contiguous (..., H, W, C) array (what to_torch_sample makes).
    return t.dim() >= 3 and t.device.type == "cpu" and not t.requires_grad and t.movedim(-3, -1).is_contiguous()


def _rows_of_one_buffer(values: list[torch.Tensor]) -> torch.Tensor | None:
    """The (B, ..., H, W, C) tensor whose rows, in order, are exactly ``values`` (channels-last (..., C, H, W)
    views of one storage that it fills from its start), or None."""
    first = values[0]
    storage = first.untyped_storage()
    step = first.numel()
    if storage.nbytes() != len(values) * step * first.element_size():
        return None
    ptr = storage.data_ptr()
    for k, v in enumerate(values):
        if v.untyped_storage().data_ptr() != ptr or v.storage_offset() != k * step or v.shape != first.shape:
            return None
    *lead, c, h, w = first.shape
    shape = (len(values), *lead, h, w, c)
    strides = [int(np.prod(shape[i + 1 :])) for i in range(len(shape))]
    return torch.empty(0, dtype=first.dtype).set_(storage, 0, shape, strides)


def _stack(values: list[torch.Tensor]) -> torch.Tensor:
    """Stack same-shape tensors; channels-last image views are stacked in NumPy (one memcpy each)
    into a (B, ..., C, H, W) channels-last tensor, which torch.stack would copy slowly. In a
    DataLoader worker, images go into a reusable shared-memory slab (:mod:`vidlabel.torch_data._shm`)."""
    if values[0].dim() >= 3 and values[0].shape[-3] > 1 and all(_channels_last_view(v) for v in values):
        whole = _rows_of_one_buffer(values)
        if whole is not None:
            # The dataset read the batch into one buffer: hand it over as it is.
            slab = slab_of(whole)
            batch = whole.movedim(-1, -3)
            return batch if slab is None else slab.tensor(batch)
        arrays = [v.movedim(-3, -1).numpy() for v in values]
        shape = (len(arrays), *arrays[0].shape)
        # In a DataLoader worker this is a reusable shared-memory slab.
        slab = take_slab(shape, arrays[0].dtype)
        if slab is None:
            return torch.from_numpy(np.stack(arrays)).movedim(-1, -3)
        try:
            np.stack(arrays, out=slab.array)
        except BaseException:
            slab.release()
            raise
        return slab.tensor(torch.from_numpy(slab.array).movedim(-1, -3))
    return torch.stack(values)


def _pooled_list(values: list[torch.Tensor]) -> list[torch.Tensor] | None:
    """Tensors of several shapes that all lie in one pool slab of this worker (StoreFrames reads a batch of
    frames of several sizes back to back into one), as a list that travels by slab; else None."""
    ptr = values[0].untyped_storage().data_ptr()
    if any(v.untyped_storage().data_ptr() != ptr for v in values):
        return None
    slab = slab_of(values[0])
    return None if slab is None else slab.tensors(values)


def _ragged(values: list[torch.Tensor]) -> list[torch.Tensor]:
    """One tensor per sample, as views of one concatenated storage where dtypes and trailing shapes agree.

    A DataLoader worker hands every storage to the main process through its own
    shared-memory segment; one storage per key instead of one per sample made
    batches of small targets about 4x faster to hand over.
    """
    first = values[0]
    if first.dim() == 0 or any(v.dtype != first.dtype or v.shape[1:] != first.shape[1:] for v in values):
        return values
    flat = torch.cat(values)
    return list(torch.split(flat, [int(v.shape[0]) for v in values]))


def _what(value: Any) -> str:
    """A short description of ``value`` for a message: its repr when short, else its type (and shape, or items)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return f"a {type(value).__name__} of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)) and value:
        shown = ", ".join(_what(v) for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)} ({shown})"
    text = repr(value)
    return f"{text} ({type(value).__name__})" if len(text) <= 60 else f"a {type(value).__name__}"


def _check_batch(batch: Any, name: str, what: str) -> None:
    if isinstance(batch, (Mapping, str, bytes)) or not isinstance(batch, Sequence):
        hint = f" (wrap one sample in a list: [{what.split()[0]}])" if isinstance(batch, Mapping) else ""
        raise OptionError(f"{name} takes a sequence of {what} dicts, got {type(batch).__name__}{hint}")
    if len(batch) == 0:
        raise OptionError(f"{name} got an empty batch")
    for i, sample in enumerate(batch):
        if not isinstance(sample, Mapping):
            raise OptionError(
                f"{name} takes a sequence of {what} dicts; sample {i} is {_what(sample)} (a transform must "
                "return the sample dict it receives, changed: a torchvision-style (image, target) pair is not one)"
            )
    # Keys are the first sample's: another key would be dropped unsaid.
    for i, sample in enumerate(batch[1:], 1):
        extra = [k for k in sample if k not in batch[0]]
        if extra:
            raise OptionError(
                f"{name}: sample {i} has key {extra[0]!r} that the first sample lacks (keys: {list(batch[0])}); "
                "every sample of a batch must have the same keys (a transform that adds a key must add it to each "
                "sample)"
            )


def _tensors(key: str, values: list[torch.Tensor], ragged: bool, same_shape: bool, name: str) -> Any:
    """A batch's tensors of one key: stacked, or one per sample (see :func:`collate_frames`)."""
    first = values[0]
    if not ragged and all(v.shape == first.shape for v in values):
        return by_value(_stack(values))
    if not ragged and same_shape:
        shapes = sorted({tuple(v.shape) for v in values})
        raise OptionError(
            f"{name}: {key!r} differs in shape across the batch ({shapes}); clips of one batch need the same "
            "frames per clip and image size"
        )
    pooled = None if ragged else _pooled_list(values)
    return pooled if pooled is not None else ragged_by_value(_ragged(values))


def _collate(batch: Sequence[Mapping[str, Any]], name: str, what: str) -> dict[str, Any]:
    _check_batch(batch, name, what)
    images, ragged_keys = key_layouts()
    ragged_keys = ragged_keys | EXTRA_RAGGED_KEYS
    # A batch of clips is one (B, T, ...) tensor per key: its samples must agree in shape.
    same_shape = schema_of(batch[0]).name == "clip"
    out: dict[str, Any] = {}
    for key in batch[0]:
        try:
            values = [_convert(key, s[key], images, ragged_keys) for s in batch]
        except KeyError as err:
            raise OptionError(f"{name}: a sample lacks key {key!r} that the first sample has") from err
        first = values[0]
        ragged = key in ragged_keys
        if ragged and all(isinstance(v, list) for v in values):
            out[key] = [ragged_by_value(list(v)) for v in values]
        elif isinstance(first, torch.Tensor) and all(isinstance(v, torch.Tensor) for v in values):
            out[key] = _tensors(key, values, ragged, same_shape, name)
        elif all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values):
            out[key] = by_value(torch.tensor([int(v) for v in values], dtype=torch.int64))
        elif all(isinstance(v, (float, np.floating)) for v in values):
            out[key] = by_value(torch.tensor([float(v) for v in values], dtype=torch.float32))
        else:
            out[key] = values
    return out


def collate_frames(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Collate samples, frame or clip, NumPy or tensors, into a batch dict.

    - ``image``, and any other tensor key that is not ragged: stacked to (B, ...) when every sample's shape
      agrees. Images are (B, 3, H, W) uint8 for frames, (B, T, 3, H, W) for clips; from
      :func:`to_torch_sample`'s channels-last views they come in channels-last memory (one copy, no
      transpose). Frames of several sizes give a list; clips of several shapes are refused;
    - ragged targets (``boxes``, ``labels``, ``track_ids``, ``annotation_ids``, ``masks``, ``attributes``, and
      any key the schemas mark ragged): a list of B tensors (views of one storage per key); a clip's
      per-frame targets a list of B lists of T tensors (``batch["boxes"][b][t]``);
    - ints (``frame_index``, ``clip_index``) and floats: a (B,) tensor;
    - strings, None and anything else (``video_id``, ``view_id``): a list.

    Keys are those of the first sample. NumPy samples are converted first, as :func:`to_torch_sample` does,
    so images come out channels first either way.

    Parameters
    ----------
    batch : sequence of dict
        Samples as a vidlabel dataset gives them, with the same keys.

    Returns
    -------
    dict
        The batch, as above.

    Raises
    ------
    OptionError
        On an empty batch, a batch that is not a sequence of sample dicts (None, one dict, a list of
        numbers), a sample missing a key of the first or holding one the first lacks, or clips of different
        shapes (frames per clip or image size).
    """
    return _collate(batch, "collate_frames", "sample")


def collate_clips(batch: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Collate clip samples into a batch dict: :func:`collate_frames`, which batches frame and clip samples
    alike (``image`` (B, T, 3, H, W) uint8, per-frame targets a list of B lists of T tensors).

    Parameters
    ----------
    batch : sequence of dict
        Clip samples with the same keys, frames per clip and image size.

    Returns
    -------
    dict
        The batch.

    Raises
    ------
    OptionError
        As :func:`collate_frames`, the messages naming ``collate_clips``.
    """
    return _collate(batch, "collate_clips", "clip sample")
