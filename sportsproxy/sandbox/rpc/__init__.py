"""The JSON-RPC side of the sandbox: the envelope, the method table and the one dispatcher that every
transport calls (the HTTP view, the in-process httpx2 transport, and a socket's frames)."""
