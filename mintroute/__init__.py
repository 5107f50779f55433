"""The integrator's mint route, `POST /api/sports-token` (built in its own issue)."""
