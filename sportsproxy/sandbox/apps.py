from __future__ import annotations

from django.apps import AppConfig


class SandboxConfig(AppConfig):
    name = "sportsproxy.sandbox"
    label = "sandbox"
    verbose_name = "Sports sandbox service"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sportsproxy.django.conf import register_transport
        from sportsproxy.sandbox import checks  # noqa: F401 - registers its system checks
        from sportsproxy.sandbox.accounts import quota  # noqa: F401 - mirrors each account's quota on save
        from sportsproxy.sandbox.rpc.transport import SandboxTransport

        register_transport("sandbox", SandboxTransport)  # SPORTS_TRANSPORT = "sandbox" answers in-process
