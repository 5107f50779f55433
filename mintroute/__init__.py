"""The integrator's mint route: `POST /api/sports-token` returns `{token, expiresAt}`.

Copy this package into your Django site. It depends on Django, Django REST framework,
django-ratelimit and the `sportsproxy` SDK only. README: "Add the mint route to an
existing Django site".
"""
