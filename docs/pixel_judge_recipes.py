"""The one-off comparison behind the pixel judge's MLP recipe (docs/results-pixel-debate.md, issue 18).

    python docs/pixel_judge_recipes.py K NET EPOCHS GAMMA [--append docs/measurements/pixel-judge-recipes.csv]
        # e.g. 6 mlp1024 30 0.9

NET is ``mlpH`` (PixelMLP with two hidden layers of H) or ``cnnC1-C2-H`` (JudgeCNN with widths
C1, C2 and a head of H). Trains on the 60,000 MNIST training images with K fresh random nonzero
pixels per sample (Adam 1e-3, batch 256, ExponentialLR GAMMA per epoch, torch seed 0, one
thread) and prints the test accuracy on K random nonzero pixels (two draws per test image)
every five epochs (with --append, a CSV row for each, rendered in the docs). Its own loop and seeds, not the package's training, so its figures are
comparable with each other, not digit for digit with `debatelab train`.
"""

import argparse
import time
from pathlib import Path

import torch
from measured import report_row
from torch import nn

from debatelab.data import load_raw
from debatelab.geometry import pixel_values
from debatelab.judges.cnn import JudgeCNN
from debatelab.judges.mlp import PixelMLP
from debatelab.judges.pixel import pixel_planes, random_nonzero_masks

HEADER = "pixels,net,epochs,gamma,epoch,accuracy_pct,seconds"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("k", type=int, help="pixels the judge sees")
    parser.add_argument("net", help="mlpH or cnnC1-C2-H")
    parser.add_argument("epochs", type=int)
    parser.add_argument("gamma", type=float, help="learning-rate decay per epoch")
    parser.add_argument("--append", type=Path, help="add the rows to this CSV")
    args = parser.parse_args()
    k, net, epochs, gamma = args.k, args.net, args.epochs, args.gamma
    torch.set_num_threads(1)
    x, y = load_raw("mnist", "train")
    xt, yt = load_raw("mnist", "test")
    v, vt = pixel_values(x), pixel_values(xt)
    y, yt = torch.as_tensor(y).long(), torch.as_tensor(yt).long()
    torch.manual_seed(0)
    if net.startswith("mlp"):
        model = PixelMLP(hidden=int(net[3:]))
    else:
        c1, c2, hidden = (int(t) for t in net[3:].split("-"))
        model = JudgeCNN(in_channels=2, widths=(c1, c2), image_size=28, hidden=hidden)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    sched = torch.optim.lr_scheduler.ExponentialLR(opt, gamma)
    gen = torch.Generator().manual_seed(1)

    def accuracy() -> float:
        model.eval()
        g, hits = torch.Generator().manual_seed(123), 0.0
        with torch.no_grad():
            for _ in range(2):
                planes = pixel_planes(vt, random_nonzero_masks(vt, k, g))
                hits += (model(planes).argmax(1) == yt).float().mean().item()
        model.train()
        return 100 * hits / 2

    start = time.time()
    for epoch in range(epochs):
        for idx in torch.randperm(len(v), generator=gen).split(256):
            planes = pixel_planes(v[idx], random_nonzero_masks(v[idx], k, gen))
            loss = nn.functional.cross_entropy(model(planes), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        if epoch % 5 == 4 or epoch == epochs - 1:
            cells = [str(k), net, str(epochs), str(gamma), str(epoch + 1), f"{accuracy():.2f}",
                     f"{time.time() - start:.0f}"]  # fmt: skip
            report_row(cells, args.append, HEADER if epoch < 5 else None)


if __name__ == "__main__":
    main()
