"""The sandbox's dashboard: accounts and API keys in the Django admin at /admin/."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from sportsproxy.sandbox.accounts.keys import assign_secret, new_secret
from sportsproxy.sandbox.models import Account, ApiKey


class ApiKeyInline(admin.TabularInline[ApiKey, Account]):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = ("public_id", "env", "last_four", "state", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin[Account]):
    list_display = ("name", "public_id", "tier", "rate_limit_class", "created_at")
    list_filter = ("tier",)
    search_fields = ("name", "public_id")
    readonly_fields = ("public_id", "created_at")
    inlines = (ApiKeyInline,)


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin[ApiKey]):
    list_display = ("public_id", "account", "env", "hint", "state", "created_at", "last_used_at", "revoked_at")
    list_filter = ("state", "env")
    search_fields = ("public_id", "account__name")
    actions = ("revoke_selected",)

    add_fields = ("account", "env")  # creating: the secret is generated, never typed
    change_fields = ("public_id", "account", "env", "hint", "state", "created_at", "last_used_at", "revoked_at")

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        return self.add_fields if obj is None else self.change_fields

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> tuple[str, ...]:
        return () if obj is None else self.change_fields

    @admin.display(description="key")
    def hint(self, key: ApiKey) -> str:
        return f"sk_{key.env}_…{key.last_four}"

    def has_delete_permission(self, request: HttpRequest, obj: ApiKey | None = None) -> bool:
        return False  # keys are revoked, never deleted: the history stays visible

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if not change:
            secret = new_secret(obj.env)
            assign_secret(obj, secret)
            request.new_api_key_secret = secret  # type: ignore[attr-defined]
        super().save_model(request, obj, form, change)

    def response_add(self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None) -> HttpResponse:
        # The secret is shown on this one page and stored nowhere (not in messages or the session).
        context = {**self.admin_site.each_context(request), "key": obj, "secret": request.new_api_key_secret}  # type: ignore[attr-defined]
        return TemplateResponse(request, "sandbox/key_created.html", context)

    # Revoking stops every mint made with the key and cannot be undone: it needs the change
    # permission, never just the view permission (Django offers the action to whoever passes this).
    @admin.action(permissions=["change"], description="Revoke selected keys (takes effect on their next request)")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = 0
        for key in queryset.filter(state=ApiKey.State.ACTIVE):
            key.revoke()
            revoked += 1
        self.message_user(
            request, f"Revoked {revoked} key(s). Tokens they minted keep working until they expire.", messages.SUCCESS
        )
