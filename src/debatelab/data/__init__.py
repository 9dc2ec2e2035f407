"""Datasets: raw readers, download, preprocessing and the named variants."""

from .preprocess import VARIANTS, ImageData, check_variant, load_variant, preprocess
from .sources import data_revision, load_raw

__all__ = [
    "VARIANTS",
    "ImageData",
    "check_variant",
    "data_revision",
    "load_raw",
    "load_variant",
    "preprocess",
]
