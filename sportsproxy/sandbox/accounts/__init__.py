"""Who is calling and what they may spend: API keys, tokens, the credential a request presents, and
the account's requests-per-minute quota and socket slots, counted in the Django cache."""
