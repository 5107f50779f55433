"""Settings for this site.

Every value comes from an environment variable (or the optional `.env` file next to
manage.py) with a default that runs the whole project offline: SQLite, an in-memory
cache and the embedded sandbox service. docs/settings.md lists them.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import django_stubs_ext
import environ
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from config import project, redis_sentinel
from config.database import database_settings
from config.service_addresses import browser_addresses

# Lets generic Django classes be written with type parameters (admin.ModelAdmin[Model]).
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

# Production takes its settings from the environment alone: with DJANGO_DEBUG off there, the
# `.env` file is not read, so a secret or key a development run wrote to it never fills a production
# setting. Otherwise `.env` fills in variables the environment does not set. DJANGO_ENV_FILE=""
# reads none (the test suite does this so a developer's `.env` cannot leak into tests).
PRODUCTION_BY_ENVIRONMENT = "DJANGO_DEBUG" in os.environ and not env.bool("DJANGO_DEBUG")
ENV_FILE = "" if PRODUCTION_BY_ENVIRONMENT else env.str("DJANGO_ENV_FILE", default=str(BASE_DIR / ".env"))
if ENV_FILE and Path(ENV_FILE).is_file():
    env.read_env(ENV_FILE, overwrite=False)


# --- Core --------------------------------------------------------------------------

# SECURITY WARNING: never run with DEBUG on in production (`make serve` refuses to).
DEBUG = env.bool("DJANGO_DEBUG", default=True)
if not DEBUG and not PRODUCTION_BY_ENVIRONMENT:
    raise ImproperlyConfigured(
        f"DJANGO_DEBUG is off in {ENV_FILE}, but production reads no .env file: set DJANGO_DEBUG=0 and "
        "the production settings in the environment instead, or remove DJANGO_DEBUG from the file."
    )

# Secrets and keys are read as written, with os.environ: django-environ would read a value that
# starts with `$` as the name of another variable (its "proxy" values), and 1 in 50 of the keys
# Django's get_random_secret_key() makes start so.

# SECURITY WARNING: keep the secret key used in production secret. Without one, a
# development run gets a random key per process (write a stable one into `.env` so that
# logins survive runserver reloads); production refuses to start.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is not set. Set it in the environment to a long random value when DJANGO_DEBUG "
            "is off (production reads no .env file)."
        )
    SECRET_KEY = get_random_secret_key()

# Check ids to waive, e.g. mintroute.E006 for a site that knows it runs one process. `make serve`
# refuses to start on any deploy check's error that is not listed here.
SILENCED_SYSTEM_CHECKS = env.list("DJANGO_SILENCED_SYSTEM_CHECKS", default=[])

ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# This site's own apps: each package of config/ with an apps.py, so that a project generated without one
# needs no line changed here or in config/urls.py.
SITE_APPS = sorted(f"config.{apps.parent.name}" for apps in (BASE_DIR / "config").glob("*/apps.py"))

INSTALLED_APPS = [
    "config.runserver.DaphneRunserver",  # first: its runserver serves HTTP and WebSocket (ASGI)
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "mintroute",  # the mint route, the SDK's checks, and the browser client's static files
    *SITE_APPS,
]

MIDDLEWARE = [
    "mintroute.middleware.follow_requests",  # first: each request's id and access line (docs/operations.md)
    "mintroute.middleware.route_answers_json",  # every answer on the route's path is its JSON
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files from Django itself, in any server
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "mintroute.middleware.forget_token_on_logout",  # logging out deletes the remembered-token cookie
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "mintroute.middleware.run_chain_in_one_thread",  # last: under ASGI, the chain above runs in one thread hop
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "config.context_processors.site",  # the project's name; the login page's hints
            ],
        },
    },
]


# --- Database and cache ------------------------------------------------------------

# DATABASE_URL picks the engine (e.g. postgres://user@127.0.0.1:5432/db, or several hosts:
# postgres://user@h1:5432,h2:5432/db?target_session_attrs=primary); SQLite otherwise (config/database.py).
DATABASE_URL = env.str("DATABASE_URL", default="") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
# Seconds PostgreSQL may take to accept a connection (each host; whole seconds, 2 at least) and to answer
# a statement (the site itself gives up half a second later): a database that never answers costs a
# request a few seconds and a 503, never a hung worker. 0 waits without a bound.
DATABASE_CONNECT_TIMEOUT = env.int("DATABASE_CONNECT_TIMEOUT", default=2)
DATABASE_STATEMENT_TIMEOUT = env.float("DATABASE_STATEMENT_TIMEOUT", default=2.0)
DATABASES = {
    "default": database_settings(
        DATABASE_URL, connect_timeout=DATABASE_CONNECT_TIMEOUT, statement_timeout=DATABASE_STATEMENT_TIMEOUT
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The cache holds rate-limit counters; REDIS_URL shares them between processes.
REDIS_URL = env.str("REDIS_URL", default="")
# With Sentinels (host:port,host:port), REDIS_URL's host part is the Sentinel service whose primary the
# cache and the channel layer follow through a failover (config/redis_sentinel.py).
REDIS_SENTINELS = redis_sentinel.sentinel_addresses(env.str("REDIS_SENTINELS", default="").strip())
# The Sentinels' own password (their `requirepass`), if they require one; REDIS_URL's is the Redis servers'.
REDIS_SENTINEL_PASSWORD = os.environ.get("REDIS_SENTINEL_PASSWORD", "")  # as written (see SECRET_KEY)
if REDIS_SENTINELS and not REDIS_URL:
    raise ImproperlyConfigured(f"REDIS_SENTINELS is set without REDIS_URL: set {redis_sentinel.URL_FORM}.")
if REDIS_URL:
    # A Redis that stops answering (rather than refusing) costs a mint 2 s and a 503. Said here, not left
    # to redis-py's defaults, which have changed between releases (5 s in the 8.1 this site locks).
    redis_bounds: dict[str, float] = {"socket_connect_timeout": 2, "socket_timeout": 2}
    CACHES = {
        "default": {
            # Django's RedisCache, counting a rate limit in one round trip (mintroute/redis_cache.py).
            "BACKEND": "mintroute.redis_cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": redis_bounds,
        }
    }
    if REDIS_SENTINELS:
        CACHES["default"] = redis_sentinel.cache_settings(
            REDIS_URL, REDIS_SENTINELS, redis_bounds, REDIS_SENTINEL_PASSWORD
        )
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# Two sites sharing one Redis database keep apart every count and record they hold there (the rate
# limits, the login throttle, the site's token and its lock): each site's keys start with a digest
# of its SECRET_KEY (never the key itself), or with the prefix the environment chooses.
CACHES["default"]["KEY_PREFIX"] = (
    env.str("DJANGO_CACHE_KEY_PREFIX", default="")
    or (hashlib.sha256(f"config.settings cache key prefix:{SECRET_KEY}".encode()).hexdigest()[:16])
)


# The channel layer carries sandbox match events to sockets; REDIS_URL spans processes.
if REDIS_URL:
    # A 15 s read timeout bounds a dead Redis connection. (channels_redis's list layer waits in a 5 s
    # blocking read, so redis-py's 5 s default closed every idle socket with 1011.)
    redis_host: dict[str, Any] = {"address": REDIS_URL, "socket_timeout": 15, "socket_connect_timeout": 5}
    if REDIS_SENTINELS:
        redis_host = redis_sentinel.channel_layer_host(
            REDIS_URL, REDIS_SENTINELS, {"socket_timeout": 15, "socket_connect_timeout": 5}, REDIS_SENTINEL_PASSWORD
        )
    # Redis pub/sub: each process subscribes once per group it needs (sportsproxy/sandbox/realtime/fanout.py)
    # and Redis pushes every event to it. It beat channels_redis's list layer in `make bench`'s
    # fan-out across processes (docs/benchmarks.md).
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer", "CONFIG": {"hosts": [redis_host]}}
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


# --- Authentication, internationalisation, static files ----------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Where collectstatic writes the files production serves (`make serve` runs it).
STATIC_ROOT = env.str("DJANGO_STATIC_ROOT", default="") or BASE_DIR / "staticfiles"
# Development serves straight from static/; production serves collectstatic's hashed, compressed copies.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
if not DEBUG:
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "config.storage.StaticFilesStorage"},
    }


# --- HTTPS and cookies ----------------------------------------------------------------------

# SECURITY WARNING: with DEBUG off these default to HTTPS-only; docs/deploy.md explains each.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]  # probes and scrapes come over plain HTTP
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=0 if DEBUG else 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=not DEBUG)
# Behind a proxy that terminates TLS and sets X-Forwarded-Proto (docs/deploy.md).
if env.bool("DJANGO_BEHIND_TLS_PROXY", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")


# --- The sports-data service -------------------------------------------------------

# SECURITY WARNING: the API key stays on the server (with the sandbox: `manage.py sandbox_key create`).
SPORTS_API_KEY = os.environ.get("SPORTS_API_KEY", "")  # as written (see SECRET_KEY)
# During a rotation: the key being replaced, tried once when SPORTS_API_KEY is refused.
SPORTS_API_KEY_PREVIOUS = os.environ.get("SPORTS_API_KEY_PREVIOUS", "")  # as written (see SECRET_KEY)

# Unset: the embedded sandbox answers in-process. Set: the address of the real service
# (or of a sandbox served by another process).
SPORTS_BASE_URL = env.str("SPORTS_BASE_URL", default="")
# Seconds before expiry the pages' browser client refreshes its token; unset (None): at the token's half-life,
# which the route's ride-through of an upstream outage covers.
SPORTS_CLIENT_REFRESH_LEEWAY = env.int("SPORTS_CLIENT_REFRESH_LEEWAY", default=None)
SPORTS_TIMEOUT = env.str("SPORTS_TIMEOUT", default="5")  # seconds; `manage.py check` validates it

# Mount the sandbox service (/sdk/v1/rpc) in this process. A project made with the sandbox for its tests only
# (config/project.py) never mounts it unless told to (its tests are).
SPORTS_SANDBOX = env.bool("SPORTS_SANDBOX", default=not SPORTS_BASE_URL and project.SANDBOX == "embedded")
# The embedded service's app (its tables, admin pages and `sandbox_key`) only in a site that mounts it;
# the pytest plugin (sportsproxy.testing) serves a site's tests without it.
if SPORTS_SANDBOX:
    INSTALLED_APPS.insert(INSTALLED_APPS.index("mintroute") + 1, "sportsproxy.sandbox")
# How the SDK reaches the service: "http" (SPORTS_BASE_URL) or "sandbox" (in-process, the sandbox mounted).
SPORTS_TRANSPORT = env.str("SPORTS_TRANSPORT", default="sandbox" if SPORTS_SANDBOX and not SPORTS_BASE_URL else "http")

# What the page's browser client calls (and its Content-Security-Policy allows). Unset: the mounted
# sandbox at the page's own origin, or, with the sandbox not mounted, SPORTS_BASE_URL's origin.
SPORTS_PUBLIC_BASE_URL, SPORTS_PUBLIC_WS_URL = browser_addresses(
    public_base_url=env.str("SPORTS_PUBLIC_BASE_URL", default=""),
    public_ws_url=env.str("SPORTS_PUBLIC_WS_URL", default=""),
    base_url=SPORTS_BASE_URL,
    sandbox_mounted=SPORTS_SANDBOX,
)
# Run the sandbox's match-event simulation in this process (one process is enough with Redis).
SPORTS_SANDBOX_EVENTS = env.bool("SPORTS_SANDBOX_EVENTS", default=True)
# Seconds per heartbeat of the sandbox's socket counters: a dead worker's slots go after two.
SPORTS_SANDBOX_SLOT_HEARTBEAT = env.float("SPORTS_SANDBOX_SLOT_HEARTBEAT", default=10.0)
# Seconds of silence after which the sandbox sends a socket a `ping` (the service's 25).
SPORTS_SANDBOX_WS_PING_AFTER = env.float("SPORTS_SANDBOX_WS_PING_AFTER", default=25.0)

# SECURITY WARNING: the sandbox signs its JWTs with this (32+ random bytes, never
# SECRET_KEY). Without one, a development run gets a random key per process.
SPORTS_SANDBOX_SIGNING_KEY = os.environ.get("SPORTS_SANDBOX_SIGNING_KEY", "")  # as written (see SECRET_KEY)
if not SPORTS_SANDBOX_SIGNING_KEY:
    if SPORTS_SANDBOX and not DEBUG:
        raise ImproperlyConfigured(
            "SPORTS_SANDBOX_SIGNING_KEY is not set. Set it to 32+ random bytes "
            '(python -c "import secrets; print(secrets.token_urlsafe(48))"), or turn SPORTS_SANDBOX off.'
        )
    SPORTS_SANDBOX_SIGNING_KEY = get_random_secret_key()


# --- The mint route (POST /api/sports-token) ----------------------------------------

# Seconds each token lives (within the service's bounds; `manage.py check` says which):
# shorter is safer if leaked, longer refreshes less.
SPORTS_TOKEN_TTL = env.int("SPORTS_TOKEN_TTL", default=600)

# django-ratelimit rate, applied per user and per client IP. Public sites must keep a limit.
SPORTS_TOKEN_RATE = env.str("SPORTS_TOKEN_RATE", default="10/m")

# django-ratelimit's own settings, at its defaults: the route's limits read them at every count, and a
# setting left unset costs each read a failed lookup.
RATELIMIT_ENABLE = True
RATELIMIT_USE_CACHE = "default"  # the cache the limits count in, and the site's token lives in
RATELIMIT_CACHE_PREFIX = "rl:"
RATELIMIT_HASH_ALGORITHM = hashlib.sha256
RATELIMIT_FAIL_OPEN = False  # a store that fails refuses the mint (503), never lets it through

# Callable (request) -> bool deciding who may get a token (dotted path).
SPORTS_TOKEN_PERMISSION = env.str("SPORTS_TOKEN_PERMISSION", default="mintroute.permissions.is_active_user")

# Who shares a token: "login" (each login its own) or "site" (every caller the site's one token).
SPORTS_TOKEN_SHARING = env.str("SPORTS_TOKEN_SHARING", default=project.TOKEN_SHARING)

# SECURITY WARNING: proxies in front of Django that append to X-Forwarded-For. 0 (direct)
# ignores the header; a higher number than reality lets clients pick their rate-limit IP.
SPORTS_TRUSTED_PROXY_COUNT = env.int("SPORTS_TRUSTED_PROXY_COUNT", default=0)
# The peers whose X-Forwarded-For is read (addresses or CIDR networks): any other peer counts by its
# own address, whatever it sends. `make serve` gives uvicorn and gunicorn the same list.
SPORTS_TRUSTED_PROXIES = env.list("SPORTS_TRUSTED_PROXIES", default=["127.0.0.0/8", "::1"])


# --- Operating it: GET /readyz and GET /metrics (docs/operations.md) -------------------

# Count the route's answers and serve them at /metrics for Prometheus (off: /metrics is 404).
SPORTS_METRICS = env.bool("SPORTS_METRICS", default=False)
# Addresses or CIDR networks that may read /metrics (comma-separated); default loopback.
SPORTS_METRICS_ALLOW = env.list("SPORTS_METRICS_ALLOW", default=["127.0.0.0/8", "::1"])
# SECURITY WARNING: a bearer token that reads /metrics from any address; empty for none.
SPORTS_METRICS_TOKEN = env.str("SPORTS_METRICS_TOKEN", default="")


# Error reports hide API keys and tokens, in request headers and in local variables too.
DEFAULT_EXCEPTION_REPORTER_FILTER = "config.error_reports.SecretsHidingReporterFilter"


# --- Logging -----------------------------------------------------------------------

# Every line names the request that caused it (`request_id`, `-` for none; docs/operations.md).
log_level = env.str("DJANGO_LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_id": {"()": "sportsproxy.request_id.RequestIdFilter"},
        "one_request_line": {"()": "config.logging.WithoutServerRequestLines"},
    },
    "formatters": {
        "json": {"()": "config.logging.JsonFormatter"},
        "text": {"format": "{asctime} {levelname} {name} [{request_id}]: {message}", "style": "{"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": env.str("DJANGO_LOG_FORMAT", default="text" if DEBUG else "json"),
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": log_level},
    "loggers": {
        # Django's own console handler on "django" (debug only) would print each of its lines, such as
        # runserver's request lines, a second time beside the root's: the root's handler says them once.
        "django": {"handlers": []},
        # One line per request (mintroute.middleware.follow_requests); WARNING turns the lines off.
        "mintroute.access": {"level": env.str("DJANGO_ACCESS_LOG_LEVEL", default=log_level)},
        # runserver's own line per request would repeat the access line, without the request's id.
        "django.channels.server": {"filters": ["one_request_line"]},
        # One INFO line per upstream request is noise; SDK failures are logged by the mint route.
        "httpx2": {"level": "WARNING"},
        "httpcore2": {"level": "WARNING"},
    },
}


# --- What the checks' messages name -----------------------------------------------------

# The environment variables above that fill Django's own settings: a check's message names the variable
# beside the setting (a site without this names the setting alone; docs/settings.md).
SPORTS_SETTINGS_VARIABLES = {
    "SECRET_KEY": "DJANGO_SECRET_KEY",
    "SILENCED_SYSTEM_CHECKS": "DJANGO_SILENCED_SYSTEM_CHECKS",
    "CACHES": "REDIS_URL",
}
