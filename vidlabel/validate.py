"""Dataset checks returning problems with stable codes. (Owner: dataset helper; stub.)"""

from __future__ import annotations

__all__: list[str] = []
