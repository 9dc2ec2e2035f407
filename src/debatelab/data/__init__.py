"""Datasets: raw readers, download, preprocessing and the registered variants."""

from .preprocess import VARIANTS, ImageData, check_variant, load_variant, preprocess
from .sources import load_raw
from .variants import (
    VARIANT_REGISTRY,
    DatasetSource,
    Variant,
    data_revision,
    get_variant,
    register_variant,
    variant_names,
)

__all__ = [
    "VARIANTS",
    "VARIANT_REGISTRY",
    "DatasetSource",
    "ImageData",
    "Variant",
    "check_variant",
    "data_revision",
    "get_variant",
    "load_raw",
    "load_variant",
    "preprocess",
    "register_variant",
    "variant_names",
]
