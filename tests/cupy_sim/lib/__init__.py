"""``cupy.lib``: only ``stride_tricks``."""
from . import stride_tricks

__all__ = ["stride_tricks"]
