# `make dev`: the site under `manage.py runserver` on $(HOST), against a sandbox service, in one command
# (config/dev.py). Where the site does not mount the sandbox (config/project.py's SANDBOX is "tests"), the
# standalone sandbox runs beside it on 127.0.0.1, its data kept in the git-ignored .sandbox/. The service's
# address and key, and the password of the user `dev`, are kept in the git-ignored .env. A SPORTS_BASE_URL
# of your own (in the environment or .env) is used instead, and nothing else starts. It prints the user and
# password to log in with; Ctrl-C stops the site and the sandbox. `exec`: make's shell becomes config.dev,
# so a SIGTERM that make passes on reaches it.
.PHONY: dev

dev: install
	HOST=$(HOST) exec $(PY) -m config.dev
