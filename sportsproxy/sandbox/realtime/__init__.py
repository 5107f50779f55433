"""The socket side of the sandbox: the WebSocket consumer, one socket's session, and the per-process
tasks that serve every open socket (timers, event fan-out and publishing, slot heartbeat, revocation)."""
