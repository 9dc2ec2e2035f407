"""debatelab: a laboratory for scalable-oversight experiments."""

from importlib.metadata import PackageNotFoundError, version

from .judges import JudgeCNN

try:
    __version__ = version("debatelab")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["JudgeCNN", "__version__"]
