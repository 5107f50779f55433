from __future__ import annotations

from django.urls import path

from mintroute.views import SportsTokenView

app_name = "mintroute"
urlpatterns = [
    path("api/sports-token", SportsTokenView.as_view(), name="sports-token"),
]
