"""Judges (and the learned debaters) as ONNX files, for use outside PyTorch (a browser, another
runtime).

Each file takes ``x`` (a batch of model inputs) and returns ``logits``; a JSON file beside it
says how to build ``x`` (preprocessing, masks) so the model can be used without debatelab.
Needs the ``onnx`` extra (``onnx`` and ``onnxscript``); ``onnxruntime``, when installed, checks
every export against PyTorch.
"""

from __future__ import annotations

import io
import logging
import os
import warnings
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import torch

from ..atomic import atomic_path, write_json
from ..errors import MissingExtraError


def require_onnx() -> None:
    """The ``onnx`` extra, or one clear error naming the pip command."""
    try:
        import onnx  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError(
            f"ONNX export needs the onnx extra ({exc.name} is missing): "
            "pip install 'debatelab[onnx]'"
        ) from None


def export_onnx(model: torch.nn.Module, path: str | os.PathLike, meta: dict,
                input_shape: tuple[int, ...] | None = None,
                check_inputs: torch.Tensor | None = None) -> dict:  # fmt: skip
    """Write ``model`` to ``path`` (ONNX, dynamic batch) and ``meta`` to ``path`` + ``.json``.

    ``input_shape`` is one input's shape without the batch (default: a :class:`JudgeCNN`'s
    image, ``(channels, size, size)``). Returns ``meta`` with ``max_abs_diff`` against PyTorch
    when onnxruntime is installed (else ``None``), on ``check_inputs`` (real inputs, where
    random normal ones are far from what the model sees) or on random inputs.
    """
    require_onnx()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    model = model.eval()
    shape = input_shape or (model.in_channels, model.image_size, model.image_size)
    example = torch.zeros((2, *shape))
    quiet_logger = logging.getLogger("torch.onnx")
    level = quiet_logger.level
    quiet_logger.setLevel(logging.ERROR)  # the exporter's chatter is not for our users
    try:
        with atomic_path(path) as tmp, warnings.catch_warnings(), redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model, (example,), str(tmp), input_names=["x"], output_names=["logits"],
                dynamic_shapes=({0: torch.export.Dim("batch")},), dynamo=True,
                external_data=False,  # one self-contained file (the weights are small)
                verbose=False,
            )  # fmt: skip
    finally:
        quiet_logger.setLevel(level)
    with torch.inference_mode():
        width = model(example).shape[1]
    meta = {**meta, "input": {"name": "x", "shape": ["batch", *shape], "dtype": "float32"},
            "output": {"name": "logits", "shape": ["batch", width]},
            "max_abs_diff": check_onnx(model, path, shape=shape, inputs=check_inputs)}  # fmt: skip
    write_json(Path(str(path) + ".json"), meta)
    return meta


def check_onnx(model: torch.nn.Module, path: str | os.PathLike, n: int = 16, seed: int = 0,
               shape: tuple[int, ...] | None = None, inputs: torch.Tensor | None = None):  # fmt: skip
    """Largest |logit difference| between onnxruntime and PyTorch on ``inputs``, else on ``n``
    random normal inputs (of one input's ``shape``, default a :class:`JudgeCNN`'s image), or
    ``None`` without onnxruntime."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    gen = torch.Generator().manual_seed(seed)
    shape = shape or (model.in_channels, model.image_size, model.image_size)
    x = inputs if inputs is not None else torch.randn((n, *shape), generator=gen)
    with torch.inference_mode():
        want = model.eval()(x).numpy()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(["logits"], {"x": x.numpy()})[0]
    return float(np.abs(got - want).max())
