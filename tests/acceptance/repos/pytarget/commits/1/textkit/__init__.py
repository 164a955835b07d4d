"""Small text helpers."""

from textkit.report import report
from textkit.slugify import slugify

__all__ = ["report", "slugify"]
