"""collate_frames: ragged targets stay one tensor per sample, backed by one storage per key."""

import numpy as np
import pytest
import torch

from vidlabel.errors import OptionError
from vidlabel.torch_data import collate_frames
from vidlabel.torch_data._common import to_torch_sample


def _sample(n_boxes: int, frame: int) -> dict:
    rng = np.random.default_rng(frame)
    return {
        "image": np.full((6, 8, 3), frame, np.uint8),
        "boxes": rng.random((n_boxes, 4)).astype(np.float32),
        "labels": np.arange(n_boxes, dtype=np.int64),
        "masks": (rng.random((n_boxes, 6, 8)) > 0.5).astype(np.uint8),
        "video_id": "v",
        "frame_index": frame,
    }


def test_ragged_targets_are_per_sample_tensors_sharing_one_storage():
    samples = [_sample(3, 0), _sample(0, 1), _sample(2, 2)]
    batch = collate_frames([to_torch_sample(s) for s in samples])
    assert batch["image"].shape == (3, 3, 6, 8)
    assert [int(img[0, 0, 0]) for img in batch["image"]] == [0, 1, 2]
    for key in ("boxes", "labels", "masks"):
        assert [tuple(t.shape) for t in batch[key]] == [s[key].shape for s in samples]
        for got, s in zip(batch[key], samples):
            np.testing.assert_array_equal(got.numpy(), s[key])
        pointers = {t.untyped_storage().data_ptr() for t in batch[key]}
        assert len(pointers) == 1
    assert batch["frame_index"].tolist() == [0, 1, 2]
    assert batch["video_id"] == ["v", "v", "v"]


def test_ragged_targets_of_different_trailing_shapes_stay_separate():
    a, b = _sample(1, 0), _sample(1, 1)
    b["masks"] = np.zeros((1, 3, 4), np.uint8)
    batch = collate_frames([to_torch_sample(a), to_torch_sample(b)])
    assert [tuple(t.shape) for t in batch["masks"]] == [(1, 6, 8), (1, 3, 4)]
    assert isinstance(batch["masks"][0], torch.Tensor)


def test_empty_batch_is_refused():
    with pytest.raises(OptionError, match="empty batch"):
        collate_frames([])


def test_a_sample_that_is_not_a_dict_is_named_in_short():
    # a torchvision-style transform returns (image, target): the message dumped both tensors' values
    pair = (torch.zeros((3, 48, 64), dtype=torch.uint8), {"boxes": torch.zeros((2, 4)), "labels": torch.arange(2)})
    with pytest.raises(OptionError) as err:
        collate_frames([pair, pair])
    message = str(err.value)
    assert message.startswith(
        "collate_frames takes a sequence of sample dicts; sample 0 is a tuple of 2 (a Tensor of shape (3, 48, 64), "
        "a dict) (a transform must return the sample dict it receives"
    )
    assert "tensor(" not in message and len(message) < 300
    with pytest.raises(OptionError, match=r"sample 1 is None \(NoneType\) \(a transform must return the sample dict"):
        collate_frames([{"frame_index": 0}, None])


def _rgb(frame: int) -> np.ndarray:
    """(6, 8, 3) uint8 whose channel c holds 10 * c + frame everywhere, so a transposed layout shows."""
    return np.stack([np.full((6, 8), 10 * c + frame, np.uint8) for c in range(3)], axis=-1)


def test_numpy_samples_collate_to_channels_first_images_as_tensor_samples_do():
    # FrameSamples.sample / iter_plan give (H, W, 3) NumPy images, and a transform may return one: the batch
    # must be (B, 3, H, W) as for tensor samples, not (B, H, W, 3)
    numpy_samples = [dict(_sample(1, k), image=_rgb(k)) for k in range(3)]
    for batch in (
        collate_frames(numpy_samples),
        collate_frames([to_torch_sample(s) for s in numpy_samples]),
        collate_frames([to_torch_sample(numpy_samples[0]), numpy_samples[1], numpy_samples[2]]),
    ):
        assert isinstance(batch["image"], torch.Tensor) and batch["image"].shape == (3, 3, 6, 8)
        for k in range(3):
            for c in range(3):
                assert batch["image"][k, c].unique().tolist() == [10 * c + k]


def test_numpy_images_of_several_sizes_come_out_channels_first_each():
    small = dict(_sample(0, 1), image=np.zeros((4, 5, 3), np.uint8))
    batch = collate_frames([dict(_sample(0, 0), image=_rgb(0)), small])
    assert [tuple(t.shape) for t in batch["image"]] == [(3, 6, 8), (3, 4, 5)]
    assert batch["image"][0][2].unique().tolist() == [20]


def test_a_key_only_a_later_sample_has_is_refused_not_dropped():
    # keys were taken from the first sample: a transform adding "weight" to some samples (not the first) had it
    # dropped from the batch without a word
    first, later = to_torch_sample(_sample(1, 3)), to_torch_sample(_sample(2, 4))
    later["weight"] = torch.tensor(0.5)
    with pytest.raises(OptionError, match=r"collate_frames: sample 1 has key 'weight' that the first sample lacks "
                       r"\(keys: \['image', 'boxes', .*\]\); every sample of a batch must have the same keys"):  # fmt: skip
        collate_frames([first, later])
    first["weight"] = torch.tensor(2.0)
    assert collate_frames([first, later])["weight"].tolist() == [2.0, 0.5]
