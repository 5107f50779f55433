"""A typical existing Django site plus `mintroute`, and nothing of this project's config."""

from __future__ import annotations

import os

SECRET_KEY = "minimal-site-used-by-one-test-only"  # throwaway test value
DEBUG = False
ALLOWED_HOSTS = ["testserver"]
USE_TZ = True
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "mintroute",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.mintroute.minimal_site.urls"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
SPORTS_API_KEY = os.environ["SPORTS_API_KEY"]
SPORTS_BASE_URL = os.environ["SPORTS_BASE_URL"]
