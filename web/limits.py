"""What a browser may ask of ``spades-web``, and the checks that hold it to that.

Any web page the user visits can send requests to a server on 127.0.0.1, and a DNS name can
be rebound to 127.0.0.1, so everything a request carries is treated as hostile:

- :class:`BrowserGuard` (ASGI middleware) refuses a ``Host`` that is not this server's name
  (421), an ``Origin`` (or ``Sec-Fetch-Site``) of another site (403), a JSON API call whose body
  is not ``application/json`` (415), a body over :data:`MAX_BODY` by its ``Content-Length``
  before reading it and a chunked one as soon as it passes the limit (413), and turns any
  unexpected error of a handler into a short 400 instead of a traceback.
- :func:`parse_json` and :func:`load_rules_yaml` bound what a body may hold (size, nesting,
  digits of a number, no YAML aliases), with short error messages.
- :func:`browser_agent` reads an agent spec against :data:`AGENT_OPTIONS`: the options a page
  may set, each with a bound that keeps one decision short, and no path (a neural checkpoint
  is one of the models the server lists, by name).

docs/web.md ("What a browser may ask for, and why") explains each limit.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import os
import re
from pathlib import Path
from typing import Any, Callable, Optional

from spades_env.rules import MAX_RULES_FILE_BYTES, MAX_RULES_FILE_DEPTH

MAX_BODY = 4_000_000            # bytes of a request body
MAX_JSON_DEPTH = 32             # nesting of a JSON body (a game record needs about 6)
MAX_INT_DIGITS = 40             # digits of a JSON integer
MAX_JSON_CONTAINERS = 400_000   # objects and lists in a body (4 MB of records hold ~150,000)
# A rules file has one set of bounds, from the command line or uploaded (spades_env.rules)
MAX_RULES_YAML = MAX_RULES_FILE_BYTES   # characters of an uploaded rules file (65,536)
MAX_YAML_DEPTH = MAX_RULES_FILE_DEPTH   # nesting of a rules file (16; one needs 1 or 2)
MAX_MESSAGE = 500               # characters of an error message sent back
MAX_NAME = 255                  # characters of a record file name
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
JSON_API_METHODS = ("POST", "PUT", "PATCH")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")

log = logging.getLogger("spades-web")


class Refused(Exception):
    """A request refused with an HTTP status and a reason for the person (file paths cut to
    their last part: the server's folders are not the page's business)."""

    def __init__(self, status: int, message: str) -> None:
        message = short(without_paths(message))
        super().__init__(message)
        self.status, self.message = status, message


def short(text: Any, limit: int = MAX_MESSAGE) -> str:
    """``text`` cut to ``limit`` characters (an error message never carries a whole input)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit:,} more characters)"


# ---------------------------------------------------------------------------- bodies

def parse_json(body: bytes, what: str = "the request body") -> Any:
    """A JSON body within the limits; :class:`Refused` (400) naming what was wrong."""
    def integer(text: str) -> int:
        if len(text.lstrip("-")) > MAX_INT_DIGITS:
            raise Refused(400, f"{what}: a number of {len(text.lstrip('-')):,} digits; at most {MAX_INT_DIGITS}")
        return int(text)

    def number(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise Refused(400, f"{what}: the number {short(text, 40)} is out of range")
        return value

    def constant(name: str) -> None:
        raise Refused(400, f"{what}: {name} is not a number JSON allows")

    containers = body.count(b"{") + body.count(b"[")      # an upper bound, counted before parsing
    if containers > MAX_JSON_CONTAINERS:
        raise Refused(400, f"{what}: {containers:,} objects and lists; at most {MAX_JSON_CONTAINERS:,}")
    try:
        data = json.loads(body, parse_int=integer, parse_float=number, parse_constant=constant)
    except RecursionError:
        raise Refused(400, f"{what}: nested too deeply (at most {MAX_JSON_DEPTH} levels)") from None
    except UnicodeDecodeError:
        raise Refused(400, f"{what}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise Refused(400, f"{what} is not JSON ({exc})") from None
    if json_depth(data) > MAX_JSON_DEPTH:
        raise Refused(400, f"{what}: nested too deeply (at most {MAX_JSON_DEPTH} levels)")
    return data


def json_depth(data: Any) -> int:
    """How deeply lists and objects nest in ``data`` (without recursion: any depth is safe)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            deepest = max(deepest, depth)
            if depth > MAX_JSON_DEPTH:
                return depth
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def load_rules_yaml(text: Any) -> dict:
    """An uploaded rules file's settings: at most :data:`MAX_RULES_YAML` characters and
    :data:`MAX_YAML_DEPTH` levels, no aliases or anchors (a few hundred bytes of nested aliases
    expand to gigabytes), Python tags refused: the checks of :mod:`spades_env.safe_yaml`, which
    rules files from the command line get too."""
    from spades_env.safe_yaml import YamlLimitError, load_yaml_text

    if not isinstance(text, str):
        raise Refused(400, f"rules_yaml: expected the text of a rules file, got {type(text).__name__}")
    if len(text) > MAX_RULES_YAML:
        raise Refused(400, f"rules_yaml: {len(text):,} characters; a rules file has at most {MAX_RULES_YAML:,}")
    try:
        data = load_yaml_text(text, "rules_yaml", MAX_YAML_DEPTH)
    except YamlLimitError as exc:
        raise Refused(400, str(exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise Refused(400, "rules_yaml: expected a mapping of rule settings (as in configs/rules/*.yaml)")
    return data


def check_record_name(name: Any) -> str:
    """A plain file name of the records folder: no path, no control character, not hidden."""
    if (not isinstance(name, str) or not name or len(name) > MAX_NAME or not name.isprintable()
            or "/" in name or "\\" in name or name.startswith(".") or not name.endswith(".json")):
        shown = short(repr(name), 80)
        raise Refused(400, f"record name {shown}: expected a plain file name ending in .json in the records "
                           f"folder (printable, at most {MAX_NAME} characters)")
    return name


# ---------------------------------------------------------------------------- agent specs

def models_offered(extra_dir: Optional[str | Path] = None) -> dict[str, Path]:
    """The neural models a browser may name: the shipped ones (``agents/models``, by their path
    there without ``.pt``, e.g. ``neural_v7``) and the ``.pt`` files directly in
    ``extra_dir`` (``spades-web --models DIR``, by file name without ``.pt``; a shipped name wins)."""
    shipped = Path(__file__).resolve().parent.parent / "agents" / "models"
    offered: dict[str, Path] = {}
    if shipped.is_dir():
        for path in sorted(shipped.rglob("*.pt")):
            offered[path.relative_to(shipped).with_suffix("").as_posix()] = path
    if extra_dir is not None and Path(extra_dir).is_dir():
        for path in sorted(Path(extra_dir).glob("*.pt")):
            if path.is_file():
                offered.setdefault(path.stem, path.resolve())
    return offered


def usable_threads_bound() -> int:
    """Threads one agent may ask for: the machine's cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


class Option:
    """One option a browser may set: ``check(value)`` returns the value to pass or raises
    ``ValueError`` saying what is allowed (``allowed``)."""

    def __init__(self, allowed: str, check: Callable[[Any], Any]) -> None:
        self.allowed, self.check = allowed, check


def _integer(lo: int, hi: int | Callable[[], int]) -> Option:
    def check(value: Any) -> int:
        top = hi() if callable(hi) else hi
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= top:
            raise ValueError(f"expected an integer {lo}..{top:,}")
        return value
    top_text = "the cores (at most 4)" if callable(hi) else f"{hi:,}"
    return Option(f"an integer {lo}..{top_text}", check)


def _number(lo: float, hi: float) -> Option:
    def check(value: Any) -> float:
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not lo <= value <= hi:
            raise ValueError(f"expected a number {lo:g}..{hi:g}")
        return value
    return Option(f"a number {lo:g}..{hi:g}", check)


def _choice(*values: Any) -> Option:
    def check(value: Any) -> Any:
        if value not in values or isinstance(value, bool) != isinstance(values[0], bool):
            raise ValueError(f"expected one of {', '.join(map(str, values))}")
        return value
    return Option(" or ".join(map(str, values)), check)


def _convention(values: tuple[str, ...]) -> Option:
    """A heuristic convention: one of its names (a spec's ``none`` arrives as None)."""
    def check(value: Any) -> Any:
        if value is None and "none" in values:
            return None
        if value not in values:
            raise ValueError(f"expected one of {', '.join(values)}")
        return value
    return Option(" or ".join(values), check)


def _conventions() -> dict[str, Option]:
    from agents.heuristic_conventions import CONVENTION_OPTIONS
    return {option: _convention(values) for option, values in CONVENTION_OPTIONS.items()}


BOOLEAN = _choice(True, False)
SEED = _integer(0, 2 ** 63 - 1)
MODEL = Option("the name of a model this server lists (GET /api/options: models)", lambda value: value)
# Budgets: the slowest decision they allow took 1.1 s (native: 20,000 worlds, no step cap),
# 2.3 s (a native bid search at every bound) and 1.8 s (Python: 1,000 worlds, 20,000 steps) on
# a busy 2-core machine (python -m web.latency --decisions SPEC, docs/web.md); the Python
# backend is ~100x slower per world than the native one.
SEARCH_MAX_WORLDS = 20_000          # the native "strong" budget
SEARCH_MAX_STEPS = 2_000_000        # cards simulated per decision (native)
PYTHON_SEARCH_MAX_WORLDS = 1_000    # the Python "strong" budget
PYTHON_SEARCH_MAX_STEPS = 20_000    # the Python default

# What a browser may set, per agent. An agent missing here takes no option but a seed; an
# option missing (``rules``, a path, ``threads`` beyond the cores...) is refused with this list.
AGENT_OPTIONS: dict[str, dict[str, Option]] = {
    "random": {"seed": SEED},
    "heuristic": {"seed": SEED, "backend": _choice("native", "python"),
                  "threads": _integer(1, usable_threads_bound), **_conventions()},
    "neural": {"seed": SEED, "checkpoint": MODEL, "greedy": BOOLEAN},
    "neural_v1": {"seed": SEED, "greedy": BOOLEAN},
    "neural_v2": {"seed": SEED, "greedy": BOOLEAN},
    "search": {
        "seed": SEED, "backend": _choice("native", "python"), "budget": _choice("default", "strong"),
        "threads": _integer(1, usable_threads_bound),
        "worlds": Option(f"an integer 1..{SEARCH_MAX_WORLDS:,} (native) or 1..{PYTHON_SEARCH_MAX_WORLDS:,} "
                         "(python)", _integer(1, SEARCH_MAX_WORLDS).check),
        "bid_worlds": _integer(1, 128),
        "max_steps": Option(f"an integer 1..{SEARCH_MAX_STEPS:,} (native) or 1..{PYTHON_SEARCH_MAX_STEPS:,} "
                            "(python), or none (native only)", lambda value: value),
        "min_worlds": _integer(1, 64), "max_time": _number(0.01, 10),
        "stage": _number(0, 1), "drop_z": _number(0, 100), "min_gain": _number(-1000, 1000),
        "min_z": _number(-100, 100), "bid_min_gain": _number(-1000, 1000), "bid_min_z": _number(-100, 100),
        "infer_bids": BOOLEAN, "bid_sharpness": _number(0, 100), "nil_mismatch": _number(0, 1),
        "oversample": _integer(1, 4), "prune": BOOLEAN, "search_bids": BOOLEAN,
        "bid_down": _integer(0, 3), "bid_up": _integer(0, 3), "bid_nil": BOOLEAN,
        "guide": MODEL, "guide_weight": _number(-100, 100), "guide_bids": BOOLEAN, "guide_base": BOOLEAN,
        "bid_objective": _choice("points", "game"),
    },
}
AGENT_OPTIONS["search_v1"] = dict(AGENT_OPTIONS["search"])     # the search before exact endgames
AGENT_OPTIONS["search"]["endgame_tricks"] = _integer(0, 5)     # 6 and more cost too much a decision


def allowed_options(name: str) -> dict[str, str]:
    """The options a browser may give agent ``name`` and their bounds (GET /api/options)."""
    return {key: option.allowed for key, option in AGENT_OPTIONS.get(name, {"seed": SEED}).items()}


def browser_agent(name: str, options: dict, models: dict[str, Path], spec: str) -> dict:
    """``options`` of a parsed spec checked against :data:`AGENT_OPTIONS` (a ``ValueError``
    naming the option and what is allowed), model names replaced by their files. A model
    not listed is refused with the same words whether or not such a file exists."""
    table = AGENT_OPTIONS.get(name, {"seed": SEED})
    checked: dict[str, Any] = {}
    for key, value in options.items():
        option = table.get(key)
        if option is None:
            raise ValueError(f"agent spec {short(spec, 80)!r}: option {short(key, 40)!r} is not accepted from a "
                             f"browser (no paths, rule files or unbounded budgets); {name} takes "
                             f"{', '.join(allowed_options(name))} (bounds: GET /api/options, agent_options)")
        if option is MODEL:
            checked[key] = _model_file(key, value, models, name)
            continue
        try:
            checked[key] = option.check(value)
        except ValueError as exc:
            raise ValueError(f"agent spec {short(spec, 120)!r}: {key}={short(value, 40)}: {exc}") from None
    if name in ("search", "search_v1"):
        _check_search_budget(checked, spec)
    return checked


def _model_file(key: str, value: Any, models: dict[str, Path], agent: str) -> str:
    if agent in ("search", "search_v1") and value == "neural":
        return "neural"
    text = str(value)
    path = models.get(text[:-3] if text.endswith(".pt") else text)
    if path is None:             # the same words whether or not a file of that name exists
        names = ", ".join(sorted(models)) or "none"
        raise ValueError(f"{agent}: {key}: not one of the models this server offers ({short(names, 200)}); a "
                         "browser names a model, never a file (spades-web --models DIR offers more)")
    return str(path)


def _check_search_budget(options: dict, spec: str) -> None:
    """Worlds and steps bounded together so that one decision stays short on either backend."""
    from spades_env.native import unavailable_reason
    backend = options.get("backend") or ("native" if unavailable_reason() is None else "python")
    steps = options.get("max_steps", "auto")
    if backend == "python":
        if options.get("budget") == "strong" and steps == "auto":
            steps = None
        if steps is None or (steps != "auto" and not _is_count(steps, PYTHON_SEARCH_MAX_STEPS)):
            raise ValueError(f"agent spec {short(spec, 120)!r}: max_steps={short(steps, 40)}: the Python search takes "
                             f"max_steps 1..{PYTHON_SEARCH_MAX_STEPS:,} from a browser (none is too slow)")
        if options.get("worlds", 0) > PYTHON_SEARCH_MAX_WORLDS:
            raise ValueError(f"agent spec {short(spec, 120)!r}: worlds={options['worlds']}: the Python search takes "
                             f"worlds 1..{PYTHON_SEARCH_MAX_WORLDS:,} from a browser")
    elif steps not in ("auto", None) and not _is_count(steps, SEARCH_MAX_STEPS):
        raise ValueError(f"agent spec {short(spec, 120)!r}: max_steps={short(steps, 40)}: expected an integer "
                         f"1..{SEARCH_MAX_STEPS:,} or none")


def _is_count(value: Any, top: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= top


# ---------------------------------------------------------------------------- the middleware

def client_gone(exc: BaseException) -> bool:
    """Whether ``exc`` says the client disconnected mid-request (every page reload did this; it
    was logged with a full traceback each time)."""
    from starlette.requests import ClientDisconnect
    gone = (ClientDisconnect, ConnectionError)
    try:
        import anyio
        gone += (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream)
    except ImportError:                         # pragma: no cover (starlette brings anyio)
        pass
    try:                                        # uvicorn's, raised by a send after the client left
        from uvicorn.protocols.utils import ClientDisconnected
        gone += (ClientDisconnected,)
    except ImportError:                         # pragma: no cover (another server)
        pass
    return isinstance(exc, gone) or (isinstance(exc, OSError) and exc.errno in (32, 104))


class BrowserGuard:
    """ASGI middleware: Host, Origin, content type and body size checked before the app sees a
    request; an error that escapes a handler answered with a short 400 (logged, never shown
    as a traceback), so the server stays up."""

    def __init__(self, app, host: str = "127.0.0.1", max_body: int = MAX_BODY) -> None:
        self.app, self.max_body = app, max_body
        bound = host.strip("[]").lower()
        self.names = set(LOOPBACK_NAMES) | ({bound} if bound not in WILDCARD_HOSTS else set())
        self.any_address = bound in WILDCARD_HOSTS      # bound to every interface: any IP literal

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self.check(scope)
        except Refused as refused:
            await _send_json(send, refused.status, {"error": refused.message})
            return
        received = 0

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise Refused(413, f"request body over {self.max_body:,} bytes: at most {self.max_body:,}")
            return message

        started = False

        async def tracked_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except Refused as refused:
            if not started:
                await _send_json(send, refused.status, {"error": refused.message})
        except Exception as exc:                      # noqa: BLE001 (the guard of last resort)
            if client_gone(exc):              # the page closed or reloaded: one line, no traceback
                log.info("spades-web: %s %s: the client went away (%s)", scope.get("method"),
                         short(scope.get("path"), 80), type(exc).__name__)
                return
            log.warning("spades-web: %s %s: %s", scope.get("method"), short(scope.get("path"), 80),
                        short(f"{type(exc).__name__}: {exc}"), exc_info=True)
            if not started:
                await _send_json(send, 400, {"error": short(f"this request could not be handled "
                                                            f"({type(exc).__name__}: {without_paths(exc)})")})

    def check(self, scope) -> Optional[int]:
        """The request's Content-Length (None when not given); :class:`Refused` when the
        request must not reach the app."""
        headers: dict[str, list[str]] = {}
        for key, value in scope.get("headers", []):
            headers.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        hosts = headers.get("host", [])
        if len(hosts) != 1 or not self.host_allowed(hosts[0]):
            shown = short(hosts[0] if hosts else "(none)", 80)
            raise Refused(421, f"Host {shown!r} is not this server's name (expected 127.0.0.1, localhost or the "
                               "--host it was started with): refused against DNS rebinding")
        method, path = scope.get("method", "GET"), scope.get("path", "")
        api = path.startswith("/api/") or path == "/api"
        if api or method not in SAFE_METHODS:
            for origin in headers.get("origin", []):
                if origin.lower().rstrip("/") != f"http://{hosts[0].lower()}":
                    raise Refused(403, f"Origin {short(origin, 80)!r} is not this server's own page: requests "
                                       "from other sites are refused")
            for site in headers.get("sec-fetch-site", []):
                if site.lower() not in ("same-origin", "none"):
                    raise Refused(403, f"Sec-Fetch-Site {short(site, 40)!r}: requests from other sites are refused")
        lengths = headers.get("content-length", [])
        length = None
        if lengths:
            if len(set(lengths)) != 1 or not lengths[0].strip().isdigit() or not lengths[0].isascii():
                raise Refused(400, f"Content-Length {short(lengths, 60)}: expected one number of bytes")
            length = int(lengths[0].strip()[:20])
            if length > self.max_body:
                raise Refused(413, f"request body of {length:,} bytes: at most {self.max_body:,}")
        if api and method in JSON_API_METHODS:
            kinds = headers.get("content-type", [])
            media = kinds[0].split(";")[0].strip().lower() if len(kinds) == 1 else ""
            if media != "application/json":
                raise Refused(415, f"Content-Type {short(kinds[0] if kinds else '(none)', 60)!r}: the API takes "
                                   "application/json bodies only")
        return length

    def host_allowed(self, host: str) -> bool:
        """``host`` (a Host header: name or address, optionally ``:port``) names this server."""
        host = host.strip().lower()
        if host.startswith("["):
            name, _, rest = host[1:].partition("]")
            if rest and not (rest.startswith(":") and rest[1:].isdigit()):
                return False
        else:
            name, _, port = host.partition(":")
            if port and not port.isdigit():
                return False
        name = name[:-1] if name.endswith(".") else name
        if name in self.names:
            return True
        if self.any_address:
            try:
                ipaddress.ip_address(name)
                return True
            except ValueError:
                return False
        return False


_PATH = re.compile(r"""(?<![^\s'"(\[=])(?:[A-Za-z]:)?(?:[/\\][^\s'"/\\]+)+""")


def without_paths(text: Any) -> str:
    """``text`` with every file path cut to its last part (this server's own URLs, ``/api/...``
    and ``/static/...``, kept): an error sent back must not tell a page where the server keeps
    its files (a link loop's message held the records folder's path)."""
    def last_part(found: re.Match) -> str:
        path = found.group(0)
        return path if path.startswith(("/api/", "/static/")) else re.split(r"[/\\]", path)[-1]
    return _PATH.sub(last_part, str(text))


async def _send_json(send, status: int, body: dict) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": data})
