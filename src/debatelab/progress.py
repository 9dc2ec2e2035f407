"""Progress bars that show on a terminal and stay quiet in logs and CI."""

from __future__ import annotations

from tqdm.auto import tqdm


def progress(iterable=None, *, enabled: bool = True, **kwargs):
    """A tqdm bar, shown only when ``enabled`` and the output is a terminal."""
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, disable=None if enabled else True, **kwargs)
