"""``spades-web``: the table and the game inspector in a browser (Starlette on uvicorn).

    spades-web                         # http://127.0.0.1:8000, opens a browser
    spades-web --port 9000 --records runs/records --no-browser
    spades-web --keep-games ~/spades-games     # where the games people choose to keep go

The page (``web/static/``: plain HTML, CSS and JavaScript, nothing fetched from elsewhere)
talks to a small JSON API:

- ``POST /api/games`` {seat, agents: {seat: spec}, rules, seed, pace} starts a whole game
  (agent specs as in ``spades-eval``); ``GET /api/games/{id}?since=V`` returns the person's
  view (waiting up to ``wait`` seconds for something newer than version V);
  ``POST /api/games/{id}/action`` {action} plays the person's action, refused with the reason
  when it is not legal; ``GET /api/games/{id}/record`` downloads the game record. Agents move
  in worker threads, so a slow one (``search``) never holds up the page or other games.
- Keeping games is the person's choice, off by default: a game started with ``keep: true`` (and
  ``player_name``: the record's ``players`` then says ``person:NAME`` for the person's seat), or
  switched on by ``POST /api/games/{id}/keep`` {keep}, has its record written to the keep folder
  (``--keep-games DIR``, by default the records folder) as ``web-<id>.json`` after every move of
  the person's and at the end (a view shows only what is written); nothing is written for a game whose switch is off.
  ``GET /api/kept-games`` says how many are kept where; ``GET /api/kept-games/export`` downloads
  them all as JSON lines (one record a line). No name or path from the client is opened.
- ``GET /api/records`` lists the records folder; ``GET /api/records/{name}`` replays one into
  frames; ``POST /api/inspect`` does the same for an uploaded record; ``POST /api/analyse``
  {record_id, step, agent} asks an agent about the position at a frame (a neural policy's
  probabilities, the search's candidate values). Only plain file names inside the records
  folder can be read.

The server binds to 127.0.0.1 unless ``--host`` says otherwise. Every request passes
:class:`web.limits.BrowserGuard` (its Host and Origin must be this server's, JSON bodies of at
most 4 MB), and agent specs from the page take only the options of
:data:`web.limits.AGENT_OPTIONS` (bounded budgets, models by name, no path).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import secrets
import stat
import sys
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from spades_env.files import FileRuleError, check_output_folder, read_bytes, write_text
from spades_env.record import RECORD_FORMAT, ReplayError
from spades_env.rules import PRESET_NAMES

from .headers import SecurityHeaders
from .limits import (MAX_BODY, BrowserGuard, Refused, allowed_options, check_record_name, load_rules_yaml,
                     models_offered, parse_json, short)
from .table import NotYourTurn, TableError, TableGame

STATIC = Path(__file__).parent / "static"
MAX_GAMES = 64               # games kept at once (the oldest finished ones make room)
MAX_RECORDS = 32             # uploaded records kept for analysis
MAX_RECORD_BYTES = 32_000_000   # ... and their JSON text in all (kept as text: parsed, 4 MB can be 100 MB)
MAX_WAIT = 10.0              # seconds a view request may wait for news
KEPT_NAME = re.compile(r"web-[0-9a-f]{12}\.json")    # a kept game's file (game ids are 12 hex digits)
MAX_EXPORTED = 100_000       # kept games in one export (a game to 500 is about 30 KB)


class ApiError(Refused):
    """A request the API refuses: an HTTP status and the reason (at most a few hundred characters)."""


class WebState:
    """The server's games and uploaded records, and the threads agents think in."""

    def __init__(self, records_dir: Path, threads: int = 8, models: Optional[dict[str, Path]] = None,
                 keep_dir: Optional[Path] = None) -> None:
        self.records_dir = Path(records_dir)
        self.keep_dir = self.records_dir if keep_dir is None else Path(keep_dir)   # the games people keep
        self.keep_lock = threading.Lock()      # one writer at a time (the person's request, the agents' thread)
        self.models = models_offered() if models is None else models   # what neural:checkpoint= may name
        self.games: "OrderedDict[str, TableGame]" = OrderedDict()
        self.records: "OrderedDict[str, str]" = OrderedDict()     # record id -> its compact JSON
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="spades-web-agent")
        self.advancing: set[str] = set()

    def game(self, game_id: str) -> TableGame:
        with self.lock:
            game = self.games.get(game_id)
        if game is None:
            raise ApiError(404, f"no game {game_id!r} (it ended long ago or never existed): start a new one")
        return game

    def add_game(self, game: TableGame) -> None:
        with self.lock:
            if len(self.games) >= MAX_GAMES:
                finished = [gid for gid, g in self.games.items() if g.over or g.error]
                if not finished:
                    raise ApiError(503, f"{MAX_GAMES} games are in progress: finish or delete one first")
                self.games.pop(finished[0]).cancel()
            self.games[game.id] = game

    def kick(self, game: TableGame) -> None:
        """Let the agents move in a worker thread (one at a time per game)."""
        with self.lock:
            if game.id in self.advancing or game.cancelled.is_set():
                return
            self.advancing.add(game.id)

        def run() -> None:
            try:
                game.advance()
                self.keep(game)
            finally:
                with self.lock:
                    self.advancing.discard(game.id)
                if game.to_act not in (None, game.seat) and not game.error and not game.cancelled.is_set():
                    self.kick(game)                    # a move raced the flag (a deleted game never)

        self.pool.submit(run)

    def keep(self, game: TableGame) -> Optional[Path]:
        """Write the game's record to the keep folder if, and only if, the person keeps it (its
        switch is on) and something happened since the last write; atomically (a file of the
        folder is always a whole record). A failure is told in the view (``keep_error``)."""
        with self.keep_lock:
            version = game.version
            if not game.keep or version == game.kept_version:
                return None
            path = self.keep_dir / f"web-{game.id}.json"
            try:                                  # by the output rule: its .tmp is not a kept name, never exported
                write_text(path, json.dumps(game.record(), indent=1), "kept game")
            except FileRuleError:                 # its text names the server's paths: not for the page
                game.keep_error = short("this game could not be kept: its folder cannot be written (the keep "
                                        "folder of spades-web --keep-games)")
                return None
            game.kept_version, game.keep_error = version, None
            return path

    def kept_files(self) -> list[Path]:
        """The kept games' files (``web-<id>.json`` directly in the keep folder, plain files, no
        links), oldest first."""
        folder = self.keep_dir
        found = []
        try:
            entries = list(folder.iterdir()) if folder.is_dir() else []
        except OSError:
            return []
        for path in entries:
            if not KEPT_NAME.fullmatch(path.name):
                continue
            try:
                info = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((info.st_mtime, path.name, path))
        return [path for _, _, path in sorted(found)[:MAX_EXPORTED]]

    def remember_record(self, record: dict) -> str:
        """Keep a record for analysis (the newest ones, within MAX_RECORDS and MAX_RECORD_BYTES)."""
        record_id = secrets.token_hex(8)
        text = json.dumps(record, separators=(",", ":"))
        with self.lock:
            self.records[record_id] = text
            while len(self.records) > MAX_RECORDS or sum(map(len, self.records.values())) > MAX_RECORD_BYTES:
                self.records.popitem(last=False)
        return record_id

    def recalled_record(self, record_id: Any) -> Optional[dict]:
        with self.lock:
            text = self.records.get(str(record_id))
        return None if text is None else json.loads(text)

    def record_file(self, name: str) -> Path:
        """A record file of the folder by plain name; nothing outside the folder."""
        check_record_name(name)
        try:
            folder = self.records_dir.resolve()
            path = (folder / name).resolve()
        except (OSError, RuntimeError):          # a link that loops: its message held the server's path
            raise ApiError(404, f"record {name!r}: cannot be opened (a link that loops or cannot be followed)")
        if path.parent != folder:
            raise ApiError(400, f"record name {name!r}: not in the records folder")
        if not path.is_file():
            raise ApiError(404, f"no record {name!r} in the records folder")
        return path


async def _json_body(request: Request) -> dict:
    """The body as a JSON object (BrowserGuard has stopped reading it at MAX_BODY bytes)."""
    body = await request.body()
    if len(body) > MAX_BODY:
        raise ApiError(413, f"request body of {len(body):,} bytes: at most {MAX_BODY:,}")
    data = parse_json(body or b"{}")
    if not isinstance(data, dict):
        raise ApiError(400, f"the request body should be a JSON object, got {type(data).__name__}")
    return data


def _state(request: Request) -> WebState:
    return request.app.state.web


async def index(request: Request) -> Response:
    return FileResponse(STATIC / "index.html")


async def favicon(request: Request) -> Response:
    """The page names /static/favicon.svg; this answers browsers that ask for /favicon.ico anyway."""
    return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")


async def options(request: Request) -> Response:
    import agents as registry
    from .table import SEAT_NAMES
    return JSONResponse({"rules": list(PRESET_NAMES), "agents": [a for a in registry.available() if a != "human"],
                         "seat_names": list(SEAT_NAMES), "records_dir": str(_state(request).records_dir),
                         "keep_dir": str(_state(request).keep_dir),
                         "models": sorted(_state(request).models),
                         "agent_options": {name: allowed_options(name) for name in registry.available() if name != "human"}})


async def new_game(request: Request) -> Response:
    data = await _json_body(request)
    unknown = sorted(set(data) - {"seat", "agents", "rules", "rules_yaml", "seed", "pace", "trick_pause", "keep",
                                  "player_name"})
    if unknown:
        raise ApiError(400, f"unknown field(s) {unknown}: expected seat, agents, rules, rules_yaml, seed, pace, "
                            "trick_pause, keep, player_name")
    if "rules_yaml" in data:                 # the text of a rules file, uploaded by the page
        data["rules"] = load_rules_yaml(data["rules_yaml"])
    agents_by_seat = data.get("agents", {})
    if not isinstance(agents_by_seat, dict):
        raise ApiError(400, "agents: expected a mapping of seat number to agent spec, e.g. {\"0\": \"heuristic\"}")
    seats = {}
    for key, spec in agents_by_seat.items():
        if not (key.isascii() and key.isdecimal() and len(key) == 1):
            raise ApiError(400, f"agents: {short(repr(key), 40)} is not a seat number (expected \"0\" to \"3\")")
        seats[int(key)] = spec
    seed = data.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ApiError(400, f"seed={seed!r}: expected an integer or null")
    state = _state(request)
    try:
        game = await asyncio.get_running_loop().run_in_executor(
            state.pool, lambda: TableGame(secrets.token_hex(6), data.get("seat", 2), seats,
                                          data.get("rules", "standard"), seed, data.get("pace", 0.0),
                                          models=state.models, trick_pause=data.get("trick_pause", 0.0),
                                          keep=data.get("keep", False), player_name=data.get("player_name")))
    except TableError as exc:
        raise ApiError(400, str(exc))
    state.add_game(game)
    state.kick(game)
    return JSONResponse(game.view(), status_code=201)


async def game_view(request: Request) -> Response:
    state = _state(request)
    game = state.game(request.path_params["game_id"])
    try:
        since = int(request.query_params.get("since", -1))
        wait = min(MAX_WAIT, max(0.0, float(request.query_params.get("wait", 0))))
    except ValueError:
        raise ApiError(400, "since and wait: expected numbers (a version, seconds)")
    deadline = time.monotonic() + wait
    while game.version <= since and time.monotonic() < deadline and not game.error:
        await asyncio.sleep(0.02)
    view = game.view()
    if game.keep and game.kept_version != game.version:
        # what a client sees is kept already (the agents' thread may not have written it yet);
        # a poll that saw nothing new costs no thread (keep() checks again under its lock)
        await asyncio.get_running_loop().run_in_executor(state.pool, state.keep, game)
    return JSONResponse(view)


async def game_action(request: Request) -> Response:
    state = _state(request)
    game = state.game(request.path_params["game_id"])
    data = await _json_body(request)
    if "action" not in data:
        raise ApiError(400, "expected {\"action\": <action id>}")
    try:
        game.play(data["action"])
    except TableError as exc:
        raise ApiError(409 if isinstance(exc, NotYourTurn) else 400, str(exc))
    if game.keep:                         # the record written off the event loop
        await asyncio.get_running_loop().run_in_executor(state.pool, state.keep, game)
    state.kick(game)
    return JSONResponse(game.view())


async def game_keep(request: Request) -> Response:
    """The person's "Keep my games" switch for this game: on writes its record now (and after
    every move of theirs); off writes nothing more (a record already written stays)."""
    state = _state(request)
    game = state.game(request.path_params["game_id"])
    data = await _json_body(request)
    if set(data) != {"keep"}:
        raise ApiError(400, "expected {\"keep\": true} or {\"keep\": false}")
    try:
        with state.keep_lock:                 # no write in flight decides on the old switch
            game.set_keep(data["keep"])
    except TableError as exc:
        raise ApiError(400, str(exc))
    await asyncio.get_running_loop().run_in_executor(state.pool, state.keep, game)
    return JSONResponse(game.view())


async def kept_games(request: Request) -> Response:
    """How many games are kept, and where (the folder the server was given)."""
    state = _state(request)
    files = await asyncio.get_running_loop().run_in_executor(state.pool, state.kept_files)
    return JSONResponse({"folder": str(state.keep_dir), "games": len(files)})


async def export_kept_games(request: Request) -> Response:
    """Every kept game as JSON lines (one record a line, oldest first), as a download. Only the
    folder's ``web-<id>.json`` files are read (no name comes from the request); a file that is
    not a readable JSON record of at most 4 MB is left out."""
    state = _state(request)
    files = await asyncio.get_running_loop().run_in_executor(state.pool, state.kept_files)

    def lines():
        for path in files:
            try:
                record = parse_json(read_bytes(path, "kept game", MAX_BODY), path.name)   # the input rule
            except (OSError, FileRuleError, Refused):
                continue
            if isinstance(record, dict):
                yield json.dumps(record, separators=(",", ":")) + "\n"

    stamp = time.strftime("%Y%m%d-%H%M%S")
    return StreamingResponse(lines(), media_type="application/x-ndjson",
                             headers={"Content-Disposition": f'attachment; filename="spades-kept-games-{stamp}.jsonl"',
                                      "Cache-Control": "no-store"})


async def game_record(request: Request) -> Response:
    game = _state(request).game(request.path_params["game_id"])
    body = json.dumps(game.record(), indent=1)
    return Response(body, media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="spades-{game.id}.json"'})


async def delete_game(request: Request) -> Response:
    state = _state(request)
    game = state.game(request.path_params["game_id"])
    with state.lock:
        state.games.pop(game.id, None)
    game.cancel()                         # its agents stop after the decision in progress
    if game.keep:                         # a kept game abandoned: its record so far
        await asyncio.get_running_loop().run_in_executor(state.pool, state.keep, game)
    return JSONResponse({"deleted": game.id})


async def list_records(request: Request) -> Response:
    folder = _state(request).records_dir
    found, skipped = [], []
    for path in (folder.glob("*.json") if folder.is_dir() else ()):
        try:                        # a dangling link or an unreadable entry is skipped, not a 400 for all
            info = path.stat()
        except OSError:
            skipped.append(path.name)
            continue
        if path.is_file():
            found.append({"name": path.name, "bytes": info.st_size, "modified": info.st_mtime})
        else:
            skipped.append(path.name)
    found.sort(key=lambda r: r["modified"], reverse=True)
    return JSONResponse({"folder": str(folder), "records": found[:500], "skipped": sorted(skipped)[:100]})


def _pick_record(record: Any, index: Any) -> tuple[Any, int, int]:
    """One record of a file or upload that holds one (a JSON object) or several (``spades-eval
    --records`` writes a list): (the record, its index, how many there are)."""
    k = _record_index(index)
    if not isinstance(record, list):
        if k != 0:
            raise ApiError(400, f"index={k}: the file holds one record (index 0)")
        return record, 0, 1
    if not record:
        raise ApiError(422, "the file holds an empty list of records")
    if not 0 <= k < len(record):
        raise ApiError(400, f"index={k}: the file holds records 0..{len(record) - 1}")
    return record[k], k, len(record)


def _record_index(index: Any) -> int:
    """A record number from a query (text) or a JSON body (a whole number): ``1.7``, ``true`` or
    ``"1e3"`` are refused, not read as 1 (``int()`` truncated them)."""
    if index is None or index == "":
        return 0
    if isinstance(index, float) and index.is_integer():
        index = int(index)
    if isinstance(index, int) and not isinstance(index, bool):
        return index
    if isinstance(index, str) and re.fullmatch(r"-?[0-9]{1,9}", index.strip()):
        return int(index.strip())
    raise ApiError(400, f"index={short(repr(index), 40)}: expected a whole record number (0 for the first)")


async def _frames(state: WebState, record: Any, index: Any = 0) -> dict:
    from .inspector import record_frames
    record, index, count = _pick_record(record, index)
    try:
        frames = await asyncio.get_running_loop().run_in_executor(state.pool, record_frames, record)
    except ReplayError as exc:
        raise ApiError(422, f"not a replayable game record ({RECORD_FORMAT}): {exc}")
    frames["record_id"] = state.remember_record(record)
    frames["index"], frames["count"] = index, count
    return frames


async def open_record(request: Request) -> Response:
    state = _state(request)
    path = state.record_file(request.path_params["name"])
    if path.stat().st_size > MAX_BODY:
        raise ApiError(413, f"{path.name}: {path.stat().st_size:,} bytes, at most {MAX_BODY:,}")
    try:
        record = parse_json(read_bytes(path, "record", MAX_BODY), path.name)
    except FileRuleError as exc:
        raise ApiError(422, f"{path.name}: {str(exc).split(': ', 1)[-1] if ': ' in str(exc) else 'cannot be read'}")
    except Refused as exc:
        raise ApiError(422, f"not a JSON game record: {exc.message}")
    result = await _frames(state, record, request.query_params.get("index", 0))
    result["name"] = path.name
    return JSONResponse(result)


async def inspect_upload(request: Request) -> Response:
    data = await _json_body(request)
    record = data.get("record", data)
    return JSONResponse(await _frames(_state(request), record, data.get("index", 0)))


async def analyse_step(request: Request) -> Response:
    from .inspector import analyse
    state = _state(request)
    data = await _json_body(request)
    record = state.recalled_record(data.get("record_id"))
    if record is None:
        raise ApiError(404, "record_id: no such record here (open or upload it again)")
    try:
        result = await asyncio.get_running_loop().run_in_executor(
            state.pool, analyse, record, data.get("step"), data.get("agent", "neural"), state.models)
    except (ReplayError, TableError) as exc:
        raise ApiError(400, str(exc))
    except (TypeError, ValueError, FileNotFoundError) as exc:
        raise ApiError(400, f"agent {data.get('agent')!r}: {exc}")
    return JSONResponse(result)


async def api_error(request: Request, exc: Refused) -> Response:
    return JSONResponse({"error": exc.message}, status_code=exc.status)


def create_app(records_dir: str | Path = "records", threads: int = 8, host: str = "127.0.0.1",
               models_dir: Optional[str | Path] = None, keep_dir: Optional[str | Path] = None) -> Starlette:
    """The ASGI app (for uvicorn, or Starlette's TestClient in the tests). ``host``: the address
    it is bound to (Host headers must name it or the loopback); ``models_dir``: more models a
    page may name (``neural:checkpoint=NAME``) besides the shipped ones; ``keep_dir``: where the
    games people choose to keep are written (default: ``records_dir``)."""
    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/api/options", options),
        Route("/api/games", new_game, methods=["POST"]),
        Route("/api/games/{game_id}", game_view),
        Route("/api/games/{game_id}", delete_game, methods=["DELETE"]),
        Route("/api/games/{game_id}/action", game_action, methods=["POST"]),
        Route("/api/games/{game_id}/record", game_record),
        Route("/api/games/{game_id}/keep", game_keep, methods=["POST"]),
        Route("/api/kept-games", kept_games),
        Route("/api/kept-games/export", export_kept_games),
        Route("/api/records", list_records),
        Route("/api/records/{name}", open_record),
        Route("/api/inspect", inspect_upload, methods=["POST"]),
        Route("/api/analyse", analyse_step, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={Refused: api_error},
                    middleware=[Middleware(SecurityHeaders), Middleware(BrowserGuard, host=host)])
    app.state.web = WebState(Path(records_dir), threads, models_offered(models_dir),
                             None if keep_dir is None else Path(keep_dir))
    return app


def main(argv: Optional[list[str]] = None) -> int:
    from evaluation.cli_common import OneLineParser      # errors in one line, not the usage block
    parser = OneLineParser(prog="spades-web", description="The Spades table and game inspector in a browser.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--records", default="records", help="folder of game records to inspect (default "
                                                             "./records)")
    parser.add_argument("--keep-games", metavar="DIR", default=None,
                        help="where the games are written that people choose to keep (the page's 'Keep my "
                             "games' switch, off by default; nothing is written while it is off); default: "
                             "the --records folder, so the inspector lists them")
    parser.add_argument("--models", default=None, help="folder of more neural models (*.pt) the page may "
                                                        "name, by file name (the shipped ones always)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    args = parser.parse_args(argv)
    if args.models is not None and not Path(args.models).is_dir():
        parser.error(f"--models {args.models}: not a folder (expected a folder of neural models, *.pt)")
    if not 0 < args.port < 65536:
        parser.error(f"--port {args.port}: expected 1..65535")
    if args.keep_games is not None:           # a file, a path under a file, a read-only folder: refused now
        try:
            check_output_folder(args.keep_games, "--keep-games")
        except FileRuleError as exc:
            parser.error(str(exc))
    keep_dir = Path(args.keep_games if args.keep_games is not None else args.records)
    try:
        import uvicorn
    except ImportError:
        print("spades-web: error: uvicorn is not installed (pip install 'spades-rl[web]')", file=sys.stderr)
        return 2
    url = f"http://{'127.0.0.1' if args.host in ('0.0.0.0', '::') else args.host}:{args.port}/"
    print(f"spades-web: serving the table at {url} (records: {Path(args.records).resolve()}; games that people "
          f"choose to keep: {keep_dir.resolve()}); Ctrl-C stops it", flush=True)
    if not args.no_browser:
        import webbrowser
        threading.Timer(1.0, lambda: webbrowser.open(url)).start()
    try:
        uvicorn.run(create_app(args.records, host=args.host, models_dir=args.models, keep_dir=keep_dir),
                    host=args.host, port=args.port, log_level="warning")
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"spades-web: error: cannot serve on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
