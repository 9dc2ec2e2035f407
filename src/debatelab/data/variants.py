"""Dataset variants as registered parts: one :class:`Variant` declares everything about one.

A variant names its **source** (a :class:`DatasetSource`: how to get the raw ``uint8`` images
and labels of a split, their shape, the class names, the reader's revision), its
**preprocessing** (REFERENCE B's antialiased resize to ``image_size``, per-channel
standardisation with training statistics, optional per-class ZCA whitening; or a function of its
own) and its **published rows** (REFERENCE B's setup and best-capability rows, when there are
any). ``debatelab study``, ``train``, ``dump``, ``sweep`` and the judges read variants only from
:data:`VARIANT_REGISTRY`; another package adds one with an entry point in the group
``debatelab.variants`` (see :mod:`debatelab.registry`)::

    [project.entry-points."debatelab.variants"]
    shapes = "my_package.data:SHAPES"

Registry keys are the variant names with ``-`` written ``_`` (registry names are letters, digits
and underscores); the name shown and accepted everywhere is :attr:`Variant.name`
(``mnist-whitened``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..reference import BEST_CAPABILITY, BEST_COLUMNS, SETUP_COLUMNS, SETUP_TABLE
from ..registry import Registry
from . import sources
from .sources import CIFAR10_CLASSES, DATA_REVISIONS, load_raw

if TYPE_CHECKING:
    import numpy as np

#: ``load(split, data_dir, download)`` -> raw ``uint8`` images ``(N, H, W[, C])`` and labels.
RawLoader = Callable[[str, "str | os.PathLike | None", bool], "tuple[np.ndarray, np.ndarray]"]


@dataclass(frozen=True)
class DatasetSource:
    """Where a variant's raw images come from."""

    name: str
    """The dataset's name (``mnist``); judges and all-mask stores are keyed by it."""
    load: RawLoader
    """``load(split, data_dir, download)``: ``split`` is ``train`` or ``test``; returns ``uint8``
    images ``(N, H, W)`` or ``(N, H, W, 3)`` and integer labels in ``0..len(classes)-1``."""
    classes: tuple[str, ...]
    """Class names, in label order."""
    shape: tuple[int, ...]
    """Shape of one raw image: ``(H, W)`` or ``(H, W, 3)``."""
    revision: int = 1
    """Revision of the images as read (their order included); raise it when the reader changes
    what it returns, so no judge or store made from the old images is reused."""


@dataclass(frozen=True)
class Variant:
    """One dataset variant: its source, its preprocessing and its published rows."""

    name: str
    """The name users write (``--dataset``, ``--variants``): letters, digits, ``-``, ``_``."""
    source: DatasetSource
    summary: str = ""
    whitened: bool = False
    """Per-class ZCA whitening after standardisation (REFERENCE B)."""
    image_size: int = 18
    """Side of the square images the judges see (the cell grid divides it)."""
    preprocess: Callable | None = None
    """``preprocess(variant, train, test, image_size) -> ImageData`` in place of REFERENCE B's
    pipeline (:func:`debatelab.data.preprocess.preprocess`); None keeps that pipeline."""
    published_setup: tuple[float, ...] | None = None
    """The published setup row (percent, in :data:`debatelab.reference.SETUP_COLUMNS` order) or
    None: the study then shows this study's row without a published one."""
    published_best: tuple[float, ...] | None = None
    """The published best-capability row (:data:`debatelab.reference.BEST_COLUMNS`) or None."""

    @property
    def dataset(self) -> str:
        return self.source.name

    @property
    def n_classes(self) -> int:
        return len(self.source.classes)

    def load_raw(self, split: str, data_dir=None, download: bool = True):
        """Raw ``(images, labels)`` of ``split`` from the variant's source."""
        if split not in ("train", "test"):
            raise ValueError(f"unknown split {split!r}; choose 'train' or 'test'")
        return self.source.load(split, data_dir, download)


def registry_key(name: str) -> str:
    return str(name).strip().replace("-", "_")


def _check_variant(key: str, obj: object) -> Variant:
    if not isinstance(obj, Variant):
        raise TypeError(f"expected a debatelab.data.variants.Variant, got {type(obj).__name__}")
    if registry_key(obj.name) != key:
        raise ValueError(f"the variant's name is {obj.name!r}, registered as {key!r}")
    if not isinstance(obj.source, DatasetSource) or not callable(obj.source.load):
        raise TypeError("a variant's source is a DatasetSource with a load function")
    if len(obj.source.classes) < 2:
        raise ValueError("a dataset needs at least two classes")
    if len(obj.source.shape) not in (2, 3) or (len(obj.source.shape) == 3
                                               and obj.source.shape[2] != 3):  # fmt: skip
        raise ValueError(f"raw images are (H, W) or (H, W, 3), got {obj.source.shape}")
    if type(obj.image_size) is not int or obj.image_size < 1:
        raise ValueError(f"image_size must be a positive int, got {obj.image_size!r}")
    for field_, columns in (("published_setup", SETUP_COLUMNS), ("published_best", BEST_COLUMNS)):
        row = getattr(obj, field_)
        if row is not None and len(row) != len(columns):
            raise ValueError(f"{field_} has {len(row)} values; the columns are "
                             f"{', '.join(columns)}")  # fmt: skip
    return obj


VARIANT_REGISTRY: Registry[Variant] = Registry("dataset variant", "debatelab.variants",
                                               _check_variant)  # fmt: skip


def register_variant(variant: Variant, source: str = "debatelab") -> Variant:
    """Add a variant to :data:`VARIANT_REGISTRY` (and so to every command that reads one)."""
    return VARIANT_REGISTRY.register(registry_key(variant.name), variant, source)


def data_revision(dataset: str) -> int:
    """The revision of dataset ``dataset`` (1 unless its reader changed what it returns): a
    built-in's from :data:`debatelab.data.sources.DATA_REVISIONS`, a plug-in's from its
    variant's source. Judges and all-mask stores are keyed by it."""
    if dataset in sources.DATASETS:
        return sources.data_revision(dataset)
    for _, v in VARIANT_REGISTRY.items():
        if v.source.name == dataset:
            return v.source.revision
    return 1


def variant_names() -> tuple[str, ...]:
    """Every registered variant's name (plug-ins included), built-ins first."""
    return tuple(v.name for _, v in VARIANT_REGISTRY.items())


def get_variant(name: str | Variant) -> Variant:
    """The variant named ``name``; an unknown name is one error listing every variant."""
    if isinstance(name, Variant):
        return name
    key = registry_key(name)
    if key not in VARIANT_REGISTRY:
        raise ValueError(f"unknown dataset variant {name!r}; choose one of "
                         f"{', '.join(variant_names())}")  # fmt: skip
    return VARIANT_REGISTRY.get(key)


class VariantNames(Mapping):
    """The registered variants by the names users write: ``choices`` of ``--dataset``, ``in``
    and iteration read the registry (plug-ins are loaded on first use)."""

    def __getitem__(self, name: str) -> Variant:
        try:
            return get_variant(name)
        except ValueError:
            raise KeyError(name) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and registry_key(name) in VARIANT_REGISTRY \
            and get_variant(name).name == name.strip()  # fmt: skip

    def __iter__(self) -> Iterator[str]:
        return iter(variant_names())

    def __len__(self) -> int:
        return len(VARIANT_REGISTRY)

    def __repr__(self) -> str:
        return f"VariantNames({list(self)})"


def _raw(dataset: str) -> RawLoader:
    def load(split, data_dir=None, download=True):
        return load_raw(dataset, split, data_dir, download=download)

    return load


def _builtin_sources() -> dict[str, DatasetSource]:
    digits = tuple(str(d) for d in range(10))
    fashion = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot")  # fmt: skip
    return {
        "mnist": DatasetSource("mnist", _raw("mnist"), digits, (28, 28)),
        "fashionmnist": DatasetSource("fashionmnist", _raw("fashionmnist"), fashion, (28, 28)),
        "cifar10": DatasetSource("cifar10", _raw("cifar10"), tuple(CIFAR10_CLASSES), (32, 32, 3),
                                 revision=DATA_REVISIONS["cifar10"]),
    }  # fmt: skip


#: The variants of REFERENCE B, in the order of its tables.
BUILTIN_VARIANTS: tuple[str, ...] = (
    "mnist", "mnist-whitened", "fashionmnist", "fashionmnist-whitened", "cifar10",
    "cifar10-whitened",
)  # fmt: skip

_SOURCES = _builtin_sources()
for _name in BUILTIN_VARIANTS:
    _dataset, _, _white = _name.partition("-")
    register_variant(Variant(
        _name, _SOURCES[_dataset],
        f"{_dataset}{', per-class ZCA whitened' if _white else ''} (REFERENCE B)",
        whitened=bool(_white), published_setup=SETUP_TABLE[_name],
        published_best=BEST_CAPABILITY[_name]))  # fmt: skip
