"""Static files in production: hashed, compressed, and ES module imports pointing at hashed names."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's storage, with Django's rewriting of `import ... from "./x.js"` turned on.

    The browser client is several ES modules. Without the rewrite the hashed (cached forever)
    entry file would import unhashed siblings (cached for a minute), and a deploy could pair a new
    entry with old modules in a user's cache.
    """

    support_js_module_import_aggregation = True
