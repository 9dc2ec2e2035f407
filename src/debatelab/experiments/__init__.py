"""Experiments: each module composes the library into one runnable study."""
