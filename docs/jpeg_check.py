"""How sensitive is a CIFAR-10 variant to JPEG damage? (docs/results-frozen-judges.md, "Why our columns are lower")

The offline CIFAR-10 copy is JPEG (quality about 75) and the official files are not at hand, so
the loss from that encoding cannot be measured directly. As a proxy this trains the gold
classifier (3 epochs, seed 0, one thread) on the images as read and on the same images encoded
once more as JPEG at ``quality``, and prints both test accuracies per variant:

    python docs/jpeg_check.py 50 cifar10-whitened cifar10
"""

from __future__ import annotations

import argparse
import io
import time

import numpy as np
import torch
from PIL import Image

from debatelab.data import load_raw, preprocess
from debatelab.judges.evaluate import accuracy
from debatelab.judges.train import TrainConfig, train_judge


def rejpeg(images: np.ndarray, quality: int) -> np.ndarray:
    """Every ``(H, W, 3)`` uint8 image encoded as JPEG at ``quality`` and decoded again."""
    out = np.empty_like(images)
    for i, image in enumerate(images):
        buffer = io.BytesIO()
        Image.fromarray(image).save(buffer, format="JPEG", quality=quality)
        out[i] = np.asarray(Image.open(io.BytesIO(buffer.getvalue())).convert("RGB"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("quality", type=int, help="JPEG quality of the extra encoding")
    parser.add_argument("variants", nargs="+", help="cifar10 and/or cifar10-whitened")
    parser.add_argument("--data-dir", default=None, help="dataset root (default: DEBATELAB_DATA)")
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    train = load_raw("cifar10", "train", args.data_dir)
    test = load_raw("cifar10", "test", args.data_dir)
    damaged = (rejpeg(train[0], args.quality), train[1]), (rejpeg(test[0], args.quality), test[1])
    change = np.abs(damaged[0][0].astype(np.int16) - train[0]).mean()
    print(f"mean absolute change of the extra encoding: {change:.2f} grey levels")
    for variant in args.variants:
        for name, (tr, te) in (("as read", (train, test)), (f"JPEG q{args.quality}", damaged)):
            start = time.perf_counter()
            data = preprocess(variant, tr, te)
            config = TrainConfig(variant=variant, kind="gold", epochs=args.epochs)
            judge = train_judge(config, data, progress=False)
            acc = 100 * accuracy(judge.model, data.x_test, data.y_test)
            print(f"{variant} {name}: test {acc:.2f} % ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
