"""The installed mint route in foreign sites whose user model is keyed by a UUID or a string."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.standalone.conftest import Sandbox
from tests.standalone.rows import answers_every_row, assert_nothing_leaked
from tests.standalone.user_models import PRIMARY_KEYS, site_with_user_model


@pytest.mark.parametrize("key_kind", PRIMARY_KEYS)
def test_a_custom_user_model_gets_every_row_with_token_reuse(
    installed_python: Path, sandbox: Sandbox, tmp_path: Path, key_kind: str
) -> None:
    site = site_with_user_model(tmp_path / "site", installed_python, sandbox.api_key, sandbox.url, key_kind)
    site.prepare()
    key_type = site.python_says(
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'foreignsite.settings'; django.setup();"
        "from django.contrib.auth import get_user_model; print(type(get_user_model().objects.get().pk).__name__)"
    )
    assert key_type == {"uuid": "UUID", "string": "str"}[key_kind]
    assert "System check identified no issues" in site.manage("check")

    with site.serving() as site_url:
        seen = answers_every_row(site_url, sandbox)  # its 200s include a token given again, not minted
    assert_nothing_leaked(seen, site, sandbox.api_key)
