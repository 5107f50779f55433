"""How to install an optional part: the one sentence every message about a missing extra uses.

The distribution that carries these packages has whatever name its project gave it, so the sentence names
the extra and the libraries it stands for, never a distribution.
"""

from __future__ import annotations


def install_hint(extra: str, libraries: str) -> str:
    """The `extra` extra, and the `pip install` of its `libraries` for a site that installs them itself."""
    return f"the `{extra}` extra, or: pip install {libraries}"
