"""The errors debatelab raises for bad input, each with a message that says what to do."""


class DebatelabError(Exception):
    """Base class: a problem with the user's input, data or cache, explained in the message."""


class DatasetNotFoundError(DebatelabError, FileNotFoundError):
    """A dataset is missing and cannot be downloaded."""


class DatasetFormatError(DebatelabError, ValueError):
    """A dataset file is corrupt, truncated or of the wrong shape."""


class CacheError(DebatelabError):
    """A cache entry cannot be read."""


class MissingExtraError(DebatelabError, ImportError):
    """An optional dependency is not installed; the message names the pip command."""
