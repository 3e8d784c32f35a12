"""What the stack is started with: the bench's models.toml (which model goes to which fake upstream, or to
the back of scenario 19) and the fake upstream's scripts in the bench process."""

from __future__ import annotations

from .procs import BACK_KEY_ENV
from .scenarios import Plan
from .scenarios.follow import BACK_AGENT
from .upstream import Script, first_token_script, openai_text_script, words


def models_toml(upstream_base: str, remote_upstream_port: int, back_port: int) -> str:
    return (
        "# written by the bench: the bench-* models go to its fake OpenAI-compatible upstream\n"
        "# scenario 6: bench-drip to the fake upstream in a process of its own (first match wins). Each of\n"
        "# its 10,000 streams holds an upstream connection; max_connections caps the route's pool (200 by\n"
        "# default; a request beyond it waits 5 s at most). The read timeout stays the default, 300 s: a\n"
        "# stream's last delta waits until all of them are open\n"
        "[[models]]\n"
        'match = "bench-drip"\n'
        'backend = "openai"\n'
        f'base_url = "http://127.0.0.1:{remote_upstream_port}/v1"\n'
        "max_connections = 20000\n"
        "# scenario 8: bench-up-* to the same upstream process\n"
        "[[models]]\n"
        'match = "bench-up-*"\n'
        'backend = "openai"\n'
        f'base_url = "http://127.0.0.1:{remote_upstream_port}/v1"\n'
        "max_connections = 4000\n"
        "# scenario 8: bench-ix-* through the interactions backend (Google's Interactions API) to it too\n"
        "[[models]]\n"
        'match = "bench-ix-*"\n'
        'backend = "interactions"\n'
        f'base_url = "http://127.0.0.1:{remote_upstream_port}"\n'
        "max_connections = 4000\n"
        "# scenario 19: the agents bench-agent-* are the back's agent (another server of ours), remote\n"
        "[[models]]\n"
        'match = "bench-agent-*"\n'
        'backend = "interactions"\n'
        f'base_url = "http://127.0.0.1:{back_port}"\n'
        f'api_key_env = "{BACK_KEY_ENV}"\n'
        f'upstream_model = "{BACK_AGENT}"\n'
        "[[models]]\n"
        'match = "bench-*"\n'
        'backend = "openai"\n'
        f'base_url = "{upstream_base}"\n'
        "read_timeout_seconds = 60.0\n"
        "deadline_seconds = 120.0\n"
        "# more than any scenario holds at once: no request of the bench waits for a connection\n"
        "max_connections = 4000\n"
    )


def upstream_scripts(plan: Plan) -> dict[str, Script]:
    return {
        "bench-fast": openai_text_script("ok and done"),
        "bench-slow": openai_text_script(words(400), chunk_delay=0.05),
        "bench-flood": openai_text_script(words(plan.flood_deltas)),
        "bench-ttft": first_token_script(plan.first_token_delay),
    }
