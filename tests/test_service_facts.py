"""The service's facts are written once, in `sportsproxy/service.py`; every other copy equals it.

The Python copies (the sandbox's, the SDK's error tree) are names bound to that module's values;
this test keeps anyone from typing a literal again. The browser client's copies
(`mintroute/static/sports/constants.js`, the `Sport` type of `sports-client.d.ts`) cannot import
Python, so they are read here (the JS with node) and compared.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from mintroute import admission
from sportsproxy import errors, service
from sportsproxy.sandbox import conf
from sportsproxy.sandbox import errors as sandbox_errors
from sportsproxy.sandbox.accounts import keys
from sportsproxy.sandbox.matches import book
from sportsproxy.sandbox.realtime import consumers, fanout, sockets

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "mintroute" / "static" / "sports"
# The browser client's own error codes: it makes them itself when no usable answer arrived.
CLIENT_ERROR_CODES = {"unavailable", "timeout", "bad_response", "closed"}
# Close codes the client knows that the service does not send: the standard ones, and 4403, which
# the client treats as final should a service send it (the sandbox refuses with 4401).
CLIENT_ONLY_CLOSE_CODES = {"NORMAL": 1000, "POLICY_VIOLATION": 1008, "FORBIDDEN": 4403}


@pytest.fixture(scope="module")
def js_constants() -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None, "node is needed to read the browser client's constants"
    source = json.dumps((CLIENT / "constants.js").as_uri())
    script = f"const c = await import({source}); console.log(JSON.stringify(c));"
    out = subprocess.run(  # noqa: S603 - node, a fixed script
        [node, "--input-type=module", "-e", script], capture_output=True, check=True, text=True, timeout=30
    ).stdout
    constants: dict[str, Any] = json.loads(out)
    return constants


def test_the_sandbox_reads_the_ttl_bounds_key_format_and_sports_from_the_service_module() -> None:
    assert (conf.TTL_MIN, conf.TTL_MAX, conf.TTL_DEFAULT) == (service.TTL_MIN, service.TTL_MAX, service.TTL_DEFAULT)
    assert keys.KEY_PATTERN.pattern == service.API_KEY_PATTERN.pattern
    assert book.SPORTS == service.SPORTS


def test_the_sandbox_closes_and_notifies_with_the_service_modules_codes() -> None:
    assert (sockets.CLOSE_UNAUTHORIZED, sockets.CLOSE_RATE_LIMITED, consumers.CLOSE_BACKLOG) == (
        service.CLOSE_UNAUTHORIZED,
        service.CLOSE_RATE_LIMITED,
        service.CLOSE_BACKLOG,
    )
    assert (sockets.AUTH_EXPIRED["method"], sockets.AUTH_REVOKED["method"]) == (
        service.AUTH_EXPIRED,
        service.AUTH_REVOKED,
    )
    assert json.loads(fanout.event_frame("sub_1", fanout.frame_tail("score", "{}")))["method"] == service.MATCH_EVENT


def test_the_three_python_lists_of_error_codes_are_one() -> None:
    sandbox_codes = {getattr(sandbox_errors, name) for name in sandbox_errors.__all__ if name.isupper()}
    assert sandbox_codes == set(service.ERROR_CODES)
    assert set(errors.ERROR_CLASSES) == set(service.ERROR_CODES)


def test_the_browser_clients_error_codes_are_the_services_and_its_own(js_constants: dict[str, Any]) -> None:
    codes = set(js_constants["ERROR"].values())
    assert codes >= CLIENT_ERROR_CODES
    assert not CLIENT_ERROR_CODES & set(service.ERROR_CODES)
    assert codes - CLIENT_ERROR_CODES <= set(service.ERROR_CODES)
    # Every code the client acts on by name is spelt as the service spells it.
    assert {name.lower(): code for name, code in js_constants["ERROR"].items() if code not in CLIENT_ERROR_CODES} == {
        code: code for code in codes - CLIENT_ERROR_CODES
    }


def test_the_browser_clients_close_codes_are_the_services(js_constants: dict[str, Any]) -> None:
    close = js_constants["CLOSE"]
    service_codes = {name: value for name, value in close.items() if name not in CLIENT_ONLY_CLOSE_CODES}
    assert service_codes == {"UNAUTHORIZED": service.CLOSE_UNAUTHORIZED, "RATE_LIMITED": service.CLOSE_RATE_LIMITED}
    assert {name: close[name] for name in CLIENT_ONLY_CLOSE_CODES} == CLIENT_ONLY_CLOSE_CODES


def test_the_browser_clients_notifications_and_reasons_are_the_services_and_the_routes(
    js_constants: dict[str, Any],
) -> None:
    assert js_constants["NOTIFICATION"] == {
        "MATCH_EVENT": service.MATCH_EVENT,
        "AUTH_EXPIRED": service.AUTH_EXPIRED,
        "AUTH_REVOKED": service.AUTH_REVOKED,
    }
    assert tuple(js_constants["REASON"].values()) == admission.REASONS


def test_the_declared_sports_are_the_services() -> None:
    declaration = (CLIENT / "sports-client.d.ts").read_text()
    sport_type = re.search(r"^export type Sport = (.*);$", declaration, re.MULTILINE)
    assert sport_type is not None
    assert tuple(re.findall(r'"([^"]+)"', sport_type[1])) == service.SPORTS
