"""What the server tells its operator: logs in one format for every process (logs.py), the request
context every line of a request carries (context.py), request ids and the access log (requests.py).

A low layer: it imports nothing else of the server, so every other layer may log through it."""
