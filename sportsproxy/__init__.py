"""The sports-data service from the integrator's side: the server SDK and the sandbox."""
