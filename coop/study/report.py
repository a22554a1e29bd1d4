"""The cooperation study's evaluation stage and its report (``spades-coop study``, :mod:`coop.study.study`).

Pieces, each written once under the study's ``results/`` (a rerun skips pieces already written;
the long matches keep journals, so a killed piece resumes):

- ``crossplay.json``: every trained agent with every other as partners (seat 0 x seat 2) against
  the reference team on the same duplicate deals, with each cell's per-deal scores;
- ``scenarios/<run>.json``: the held-out scenario of ``spades-coop run`` (the zoo's held-out
  partners, the agent on either seat), normalised per partner (0 random, 1 the partner's copy);
- ``signals/<run>.json``: ``spades-coop signals`` (bid information, listening, nil cover);
- ``league.json``: ``spades-league`` over every trained agent plus ``league_extra``.

:func:`analyse` turns them into ``summary.json``: per method, self-play and cross-play scores and
the self-play minus cross-play gap, each paired by deal with a 95% t interval over deals; the
cross-play between methods; the held-out scores; the hypotheses of issue 41 as paired contrasts.
:func:`write_report` writes ``report.md`` (the tables docs/cooperation.md shows) and the PNGs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

from coop.common import fmean, write_json
from coop.study.errors import StudyError
from evaluation.statistics import mean_interval
from spades_env.files import save_figure, write_text

HELD_OUT = "held-out"


def interval_dict(values: list[float]) -> dict:
    """Mean and its 95% t-interval as {mean, low, high, n} (no interval for one value)."""
    interval = mean_interval(values)
    return {"mean": interval.mean, "low": interval.low, "high": interval.high, "n": interval.n}


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _interval(d, keys=("value", "low", "high")) -> bool:
    return isinstance(d, dict) and all(k in d and (d[k] is None or _number(d[k])) for k in keys)


def _square(matrix, n: int, cell) -> bool:
    return isinstance(matrix, list) and len(matrix) == n and all(
        isinstance(row, list) and len(row) == n and all(cell(c) for c in row) for row in matrix)


def _crossplay_ok(d: dict) -> bool:
    runs = d.get("runs")
    if not (isinstance(runs, list) and runs and all(isinstance(r, str) for r in runs)
            and isinstance(d.get("reference"), str)):
        return False
    n = len(runs)
    cells = d.get("unit_diffs")
    if not _square(cells, n, lambda c: isinstance(c, list) and c and all(_number(x) for x in c)):
        return False
    return len({len(c) for row in cells for c in row}) == 1 and _square(d.get("score_diff"), n, _number)


def _scenario_ok(d: dict) -> bool:
    first = d.get("scenarios")[0] if isinstance(d.get("scenarios"), list) and d.get("scenarios") else None
    return (isinstance(first, dict) and _interval(first, ("score", "low", "high", "normalised"))
            and _number(first.get("score"))
            and (first.get("per_deal") is None or isinstance(first.get("per_deal"), list)
                 and all(_number(x) for x in first["per_deal"]))
            and isinstance(first.get("partners", []), list)
            and all(isinstance(p, dict) and isinstance(p.get("partner"), str) and _number(p.get("score"))
                    and (p.get("copy") is None or _number(p.get("copy"))) for p in first.get("partners", [])))


def _signals_ok(d: dict) -> bool:
    return all(_interval(d.get(k)) for k in ("bid_information", "listening", "nil_cover"))


def _league_ok(d: dict) -> bool:
    ratings, nash = d.get("ratings"), (d.get("nash") or {}).get("ratings") if isinstance(d.get("nash"), dict) else None
    return (isinstance(ratings, list) and ratings and isinstance(nash, list)
            and all(isinstance(r, dict) and isinstance(r.get("agent"), str) and _number(r.get("rating"))
                    and _number(r.get("low")) and _number(r.get("high")) for r in ratings)
            and all(isinstance(r, dict) and isinstance(r.get("agent"), str) and _number(r.get("nash_average"))
                    for r in nash)
            and {r["agent"] for r in ratings} <= {r["agent"] for r in nash})


PIECE_CHECKS = {"crossplay": _crossplay_ok, "scenario": _scenario_ok, "signals": _signals_ok, "league": _league_ok}


def read_piece(path: Path, kind: str) -> dict:
    """A result piece this study wrote, checked for the fields the report reads: a truncated or
    foreign file is a StudyError naming it (was a traceback, or silently nothing)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise StudyError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (ValueError, RecursionError) as exc:
        raise StudyError(f"{path}: not valid JSON ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); "
                         "a truncated piece: delete it and run --stage evaluate to play it again") from None
    if not isinstance(data, dict) or not PIECE_CHECKS[kind](data):
        raise StudyError(f"{path}: not a {kind} piece of this study (its fields are missing or of the wrong type); "
                         "delete it and run --stage evaluate to play it again")
    return data


def model_hash(run) -> str:
    """The run's model.pt, by its bytes (a model replaced after the evaluation changes it)."""
    import hashlib
    from spades_env.files import MAX_MODEL_BYTES, read_bytes
    return hashlib.blake2b(read_bytes(run.path / "model.pt", "model", MAX_MODEL_BYTES), digest_size=8).hexdigest()


def stale_reason(path: Path, expected: dict) -> Optional[str]:
    """Why the written piece at ``path`` is not one of ``expected``'s inputs (a replaced model, a
    run added, other deals, another reference), or None when it is current or not written."""
    if not path.is_file():
        return None
    piece = _read_json(path)
    found = piece.get("inputs")
    if found == expected:
        return None
    if found is None:       # written before pieces recorded their inputs: only its runs can be checked
        runs = piece.get("runs")
        if not isinstance(runs, list) or "runs" not in expected or runs == list(expected["runs"]):
            return None
        return "the runs changed"
    if not isinstance(found, dict):
        return "its record of its inputs is not readable"
    changed = sorted(k for k in set(expected) | set(found) if expected.get(k) != found.get(k))
    return ", ".join(_what_changed(k, found.get(k), expected.get(k)) for k in changed)


def _stale(path: Path, expected: dict, log: Callable[[str], None]) -> None:
    """Delete a written piece (its journal and figure too) that is not current: nothing stale is
    mixed in."""
    why = stale_reason(path, expected)
    if why is None:
        return
    log(f"evaluate: {path.relative_to(path.parents[1]) if len(path.parents) > 1 else path} is played again ({why})")
    path.unlink()
    path.with_suffix(".journal").unlink(missing_ok=True)
    path.with_suffix(".png").unlink(missing_ok=True)


def piece_inputs(study, runs) -> dict[Path, dict]:
    """What each piece of ``runs`` (finished runs) is played from, by its path under results/."""
    ev, out = study.evaluation, study.results_dir
    seed = int(ev["seed"])
    models = {r.name: model_hash(r) for r in runs}
    # rules and partners other than the standard ones are inputs too (absent otherwise: the pieces
    # of the studies measured before they existed stay current)
    other = {"rules": study.rules} if study.rules != "standard" else {}
    partners = {"partners": list(ev["held_out_partners"])} if ev.get("held_out_partners") else {}
    inputs = {out / "crossplay.json": {"runs": models, "deals": ev["crossplay_deals"], "reference": ev["reference"],
                                       "seed": seed, **other},
              out / "league.json": {"runs": models, "extra": list(ev["league_extra"]), "deals": ev["league_deals"],
                                    "seed": seed, **other}}
    for run in runs:
        inputs[out / "scenarios" / f"{run.name}.json"] = {"model": models[run.name], "deals": ev["suite_deals"],
                                                          "suite": ev["suite"], "seed": seed, **other, **partners}
        inputs[out / "signals" / f"{run.name}.json"] = {"model": models[run.name], "deals": ev["signals_deals"],
                                                        "seed": seed, **other}
    return inputs


def check_current(study) -> None:
    """``--report`` reads only pieces played from the study as it is now: a stale one is refused
    with the reason (``--stage evaluate`` plays it again)."""
    for path, expected in piece_inputs(study, [r for r in study.runs() if r.done]).items():
        why = stale_reason(path, expected)
        if why is not None:
            raise StudyError(f"{path}: not played from the study as it is now ({why}); run --stage evaluate to "
                             "play it again")


def _what_changed(key: str, old, new) -> str:
    if key == "runs" and isinstance(old, dict) and isinstance(new, dict):
        added, gone = sorted(set(new) - set(old)), sorted(set(old) - set(new))
        replaced = sorted(n for n in set(old) & set(new) if old[n] != new[n])
        parts = ([f"runs added: {', '.join(added)}"] if added else []) + \
                ([f"runs gone: {', '.join(gone)}"] if gone else []) + \
                ([f"models replaced: {', '.join(replaced)}"] if replaced else [])
        return "; ".join(parts) or "the runs changed"
    if key == "model":
        return "the run's model.pt was replaced"
    return f"{key} {old!r} -> {new!r}"


def study_suite(name: str = HELD_OUT, rules: str = "standard", partners: Optional[list] = None):
    """A suite of ``spades-coop run`` by name: ``held-out`` (the standard suite's held-out scenario
    alone, the study's default), or any other (the report reads its first scenario; ``quick``
    for smoke tests). Its first scenario is played under the study's ``rules`` where they are not
    the standard ones, beside ``partners`` where given (evaluation.held_out_partners)."""
    import dataclasses

    from coop.measures.scenarios import Suite, get_suite
    suite = get_suite(name)
    if rules == "standard" and not partners:
        return suite
    first = suite.scenarios[0]
    changed = dataclasses.replace(first, rules=rules, partners=tuple(partners) if partners else first.partners)
    return Suite(suite.name, (changed,) + tuple(suite.scenarios[1:]), suite.about)


def evaluate_stage(study, workers: Optional[int] = None, progress: bool = True,
                   log: Callable[[str], None] = print) -> dict:
    """Play every piece not yet written, then :func:`analyse`. Returns the summary."""
    from coop.measures.league import plot_league, run_league
    from evaluation.results import crossplay
    from coop.measures.scenarios import run_suite, suite_definition, suite_hash
    from coop.measures.signals import measure_signals

    runs = [r for r in study.runs() if r.done]
    missing = [r.name for r in study.runs() if not r.done]
    if len(runs) < 2:
        raise StudyError(f"evaluate: fewer than two finished runs in {study.runs_dir} (run --stage train first)")
    if missing:
        log(f"evaluate: {len(missing)} runs are not finished and are left out: {', '.join(missing)}")
    ev, out = study.evaluation, study.results_dir
    out.mkdir(parents=True, exist_ok=True)
    seed = int(ev["seed"])
    expected = piece_inputs(study, runs)
    path = out / "crossplay.json"
    inputs = expected[path]
    _stale(path, inputs, log)
    if not path.is_file():
        log(f"evaluate: cross-play of {len(runs)} agents, {ev['crossplay_deals']} duplicate deals per pairing")
        result = crossplay([r.spec for r in runs], reference=ev["reference"], deals=ev["crossplay_deals"],
                           duplicate=True, rules=study.rules, seed=seed, workers=workers, progress=progress,
                           journal=str(out / "crossplay.journal"))
        data = result.to_dict(timing=False)
        data["runs"] = [r.name for r in runs]
        data["unit_diffs"] = [[cell.unit_diffs for cell in row] for row in result.cells]
        data["inputs"] = inputs
        write_json(path, data)
    suite = study_suite(ev["suite"], study.rules, ev.get("held_out_partners"))
    expected_hash = suite_hash(suite_definition(suite, ev["suite_deals"], seed))
    for run in runs:
        path = out / "scenarios" / f"{run.name}.json"
        inputs = expected[path]
        _stale(path, inputs, log)
        if path.is_file() and _read_json(path).get("suite_hash") != expected_hash:
            # the zoo (or the suite) changed since this piece was played: its partners are not the suite's
            log(f"evaluate: {run.name}'s held-out scenario was played on another suite (the zoo changed): again")
            path.unlink()
            path.with_suffix(".journal").unlink(missing_ok=True)
        if not path.is_file():
            log(f"evaluate: held-out scenario, {run.name}")
            path.parent.mkdir(parents=True, exist_ok=True)
            result = run_suite(run.spec, suite, deals=ev["suite_deals"], seed=seed, workers=workers,
                               progress=progress, journal=str(path.with_suffix(".journal")))
            write_json(path, {**result, "run": run.name, "inputs": inputs})
        path = out / "signals" / f"{run.name}.json"
        inputs = expected[path]
        _stale(path, inputs, log)
        if not path.is_file():
            log(f"evaluate: signals, {run.name}")
            result = measure_signals(run.spec, deals=ev["signals_deals"], seed=seed, rules=study.rules,
                                     workers=workers, progress=progress)
            write_json(path, {**result, "run": run.name, "inputs": inputs})
    path = out / "league.json"
    inputs = expected[path]
    _stale(path, inputs, log)
    if not path.is_file():
        roster = [r.spec for r in runs] + list(ev["league_extra"])
        log(f"evaluate: league of {len(roster)} agents, {ev['league_deals']} duplicate deals per pair")
        result = run_league(roster, deals=ev["league_deals"], seed=seed, workers=workers, progress=progress,
                            journal=str(out / "league.journal"), rules=study.rules)
        names = {r.spec: r.name for r in runs}
        for row in result["ratings"] + result["nash"]["ratings"]:
            row["agent"] = names.get(row["agent"], row["agent"])
        result["roster"] = [names.get(a, a) for a in result["roster"]]
        result["inputs"] = inputs
        write_json(path, result)
        plot_league(result, out / "league.png")
    return analyse(study)


# ------------------------------------------------------------------ analysis
def _method_of(study, names: list[str]) -> dict[str, str]:
    by_name = {r.name: r.method.name for r in study.runs()}
    return {n: by_name[n] for n in names}


def crossplay_analysis(names: list[str], methods: dict[str, str], diffs: list[list[list[float]]]) -> dict:
    """Per method: self-play (diagonal), cross-play (off-diagonal pairs within the method) and
    their gap, per deal then a t interval over deals; between methods: cross-play of pairs with
    one agent of each (both seat orders)."""
    order = list(dict.fromkeys(methods[n] for n in names))
    index = {m: [i for i, n in enumerate(names) if methods[n] == m] for m in order}
    deals = len(diffs[0][0])

    def per_deal(pairs: list[tuple[int, int]]) -> list[float]:
        return [fmean([diffs[i][j][d] for i, j in pairs]) for d in range(deals)]

    within = {}
    for m, members in index.items():
        sp = per_deal([(i, i) for i in members])
        cross_pairs = [(i, j) for i in members for j in members if i != j]
        entry = {"agents": len(members), "self_play": interval_dict(sp)}
        if cross_pairs:
            xp = per_deal(cross_pairs)
            entry["cross_play"] = interval_dict(xp)
            entry["gap"] = interval_dict([a - b for a, b in zip(sp, xp)])
            entry["per_deal_gap"] = [a - b for a, b in zip(sp, xp)]
        within[m] = entry
    def pairs_iv(pairs: list[tuple[int, int]]) -> dict:      # one seed per method: no pair within it
        return interval_dict(per_deal(pairs)) if pairs else {"mean": None, "low": None, "high": None, "n": 0}

    between = {a: {b: pairs_iv([(i, j) for i in index[a] for j in index[b] if i != j]
                               + [(j, i) for i in index[a] for j in index[b] if i != j])
                   for b in order} for a in order}
    return {"methods": order, "deals": deals, "within": within, "between": between}


def hypotheses(cross: dict, held_out: dict) -> list[dict]:
    """Issue 41's hypotheses as paired contrasts over deals (the first method is the baseline):
    a later method's gap minus half the baseline's (supported if the interval is below 0), and
    each method's held-out score minus the best baseline seed's (paired by deal)."""
    order = cross["methods"]
    base = order[0]
    out = []
    base_gap = cross["within"][base].get("per_deal_gap")
    for m in order[1:]:
        gap = cross["within"][m].get("per_deal_gap")
        if base_gap and gap:
            c = interval_dict([g - 0.5 * b for g, b in zip(gap, base_gap)])
            out.append({"hypothesis": f"{m}: gap <= half of {base}'s", "contrast": f"gap({m}) - 0.5 gap({base})",
                        **c, "supported": c["high"] is not None and c["high"] < 0})
    return out + held_out.get("contrasts", [])


def held_out_analysis(study, names: list[str], methods: dict[str, str]) -> dict:
    """Per run and per method the held-out scenario's score and normalised score; with per-deal
    scores, each run's score minus the best seed of the first method, paired by deal."""
    rows = {}
    for name in names:
        path = study.results_dir / "scenarios" / f"{name}.json"
        if path.is_file():
            data = read_piece(path, "scenario")
            s = data["scenarios"][0]
            rows[name] = {"method": methods[name], "score": s["score"], "low": s["low"], "high": s["high"],
                          "normalised": s["normalised"], "normalised_low": s.get("normalised_low"),
                          "normalised_high": s.get("normalised_high"), "per_deal": s.get("per_deal"),
                          "partners": {p["partner"]: (p["score"], p["copy"]) for p in s.get("partners", [])}}
    if not rows:
        return {"runs": {}, "methods": {}, "contrasts": []}
    order = list(dict.fromkeys(methods[n] for n in names))
    per_method = {}
    for m in order:
        members = [r for r in rows.values() if r["method"] == m]
        if members:
            normalised = [r["normalised"] for r in members if r["normalised"] is not None]
            per_method[m] = {"score": fmean([r["score"] for r in members]),
                             "score_seeds": interval_dict([r["score"] for r in members]),
                             "normalised": fmean(normalised or [float("nan")]),
                             "normalised_seeds": interval_dict(normalised) if normalised else None,
                             "best": max(r["score"] for r in members), "seeds": len(members)}
    # Beside each partner: every method's mean over its seeds, and the partner's own copy (the same
    # deals and seat for every run, so the copy's score is one number).
    partners: dict[str, dict] = {}
    for r in rows.values():
        for partner, (score, copy) in r["partners"].items():
            partners.setdefault(partner, {"copy": copy, "scores": {}})["scores"].setdefault(r["method"], []).append(score)
    by_partner = {name: {"copy": v["copy"], **{m: fmean(v["scores"][m]) for m in order if m in v["scores"]}}
                  for name, v in partners.items()}
    contrasts = []
    base = [n for n in rows if rows[n]["method"] == order[0]]
    if base and all(rows[n]["per_deal"] for n in rows):
        best = max(base, key=lambda n: rows[n]["score"])
        for m in order[1:]:
            members = [n for n in rows if rows[n]["method"] == m]
            if not members:
                continue
            top = max(members, key=lambda n: rows[n]["score"])
            c = interval_dict([a - b for a, b in zip(rows[top]["per_deal"], rows[best]["per_deal"])])
            contrasts.append({"hypothesis": f"{m}'s best seed beats {order[0]}'s best seed with held-out partners",
                              "contrast": f"held-out({top}) - held-out({best})", **c,
                              "supported": c["low"] is not None and c["low"] > 0})
    for r in rows.values():
        r.pop("per_deal", None)
        r.pop("partners", None)
    return {"runs": rows, "methods": per_method, "partners": by_partner, "contrasts": contrasts}


def cpu_hours(study) -> float:
    """CPU hours of the study's finished runs (one thread each: their wall time)."""
    total = 0.0
    for run in study.runs():
        path = run.path / "final_eval.json"
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                wall = data.get("wall_s") or 0.0
                if isinstance(wall, bool) or not isinstance(wall, (int, float)) or not 0 <= wall < 1e9:
                    raise ValueError(f"wall_s={wall!r}")
            except (OSError, ValueError, AttributeError, RecursionError) as exc:
                raise StudyError(f"{path}: not a run's final evaluation ({str(exc).splitlines()[0][:80]}); "
                                 "run the study's train stage again with --resume") from None
            total += float(wall)
    return total / 3600.0


def analyse(study) -> dict:
    """``summary.json`` from the pieces written (and the cost of the training runs)."""

    out = study.results_dir
    cross_data = read_piece(out / "crossplay.json", "crossplay")
    names = cross_data["runs"]
    unknown = [n for n in names if n not in {r.name for r in study.runs()}]
    if unknown:
        raise StudyError(f"{out / 'crossplay.json'}: run {unknown[0]!r} is not a run of this study (a foreign "
                         "piece, or the config changed): run --stage evaluate to play it again")
    methods = _method_of(study, names)
    cross = crossplay_analysis(names, methods, cross_data["unit_diffs"])
    held = held_out_analysis(study, names, methods)
    signals = {}
    for name in names:
        path = out / "signals" / f"{name}.json"
        if path.is_file():
            s = read_piece(path, "signals")
            signals[name] = {"method": methods[name], **{k: s[k] for k in ("bid_information", "listening", "nil_cover")},
                             **{k: s[k] for k in ("bid_information_hand", "listening_kl", "message_information_hand",
                                                  "message_listening", "message_listening_kl") if s.get(k)}}
    summary = {"study": study.name, "runs": names, "methods": methods, "reference": cross_data["reference"],
               "training_cpu_hours": cpu_hours(study), "crossplay": cross, "held_out": held, "signals": signals,
               "hypotheses": hypotheses(cross, held)}
    for entry in summary["crossplay"]["within"].values():
        entry.pop("per_deal_gap", None)
    rating = cross_data.get("cooperative_rating")
    if rating:
        # the piece lists its specs and run names in the same order; a folder measured elsewhere and then
        # moved keeps its old paths in the specs, so names come from that order, not from today's specs
        by_spec = {r.spec: r.name for r in study.runs()}
        if len(cross_data.get("agents", [])) == len(names):
            by_spec.update(zip(cross_data["agents"], names))
        summary["cooperative_rating"] = _named_rating(rating, by_spec)
    league = out / "league.json"
    if league.is_file():
        data = read_piece(league, "league")
        summary["league"] = {"ratings": data["ratings"], "nash": data["nash"]["ratings"]}
    write_json(out / "summary.json", summary)
    _plot_crossplay(names, methods, cross_data["score_diff"], out / "crossplay.png")
    _plot_gaps(cross, out / "gaps.png")
    return summary


def _named_rating(rating: dict, names: dict[str, str]) -> dict:
    """The cross-play's cooperative rating with each agent spec replaced by its run's name."""
    name = lambda spec: names.get(spec, spec)     # noqa: E731
    return {**rating, "agents": [name(a) for a in rating["agents"]],
            "ratings": [{**r, "agent": name(r["agent"]), "best_fit": name(r["best_fit"])} for r in rating["ratings"]]}


# ------------------------------------------------------------------ pictures and tables
def _plot_crossplay(names, methods, matrix, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2 + 0.45 * len(names), 1.5 + 0.45 * len(names)))
    image = ax.imshow(matrix, cmap="RdYlGn")
    ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
    ax.set_yticks(range(len(names)), names, fontsize=7)
    edges = [i for i in range(1, len(names)) if methods[names[i]] != methods[names[i - 1]]]
    for e in edges:
        ax.axhline(e - 0.5, color="black", linewidth=1)
        ax.axvline(e - 0.5, color="black", linewidth=1)
    fig.colorbar(image, ax=ax, label="points per hand vs the reference")
    ax.set_xlabel("seat 2 partner")
    ax.set_ylabel("seat 0 partner")
    ax.set_title("cross-play: every pair of trained agents as partners")
    fig.tight_layout()
    save_figure(fig, path, "plot", dpi=110)
    plt.close(fig)


def _plot_gaps(cross: dict, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    order = [m for m in cross["methods"] if "gap" in cross["within"][m]]
    if not order:
        return
    fig, ax = plt.subplots(figsize=(1.5 + 1.4 * len(order), 3.2))
    for k, what in enumerate(("self_play", "cross_play")):
        xs = [i + (k - 0.5) * 0.35 for i in range(len(order))]
        vals = [cross["within"][m][what] for m in order]
        ax.bar(xs, [v["mean"] for v in vals], 0.35, label=what.replace("_", "-"),
               yerr=[[v["mean"] - v["low"] for v in vals], [v["high"] - v["mean"] for v in vals]], capsize=3)
    ax.set_xticks(range(len(order)), order)
    ax.set_ylabel("points per hand vs the reference")
    ax.legend()
    ax.set_title("self-play and cross-play by method (95% intervals over deals)")
    fig.tight_layout()
    save_figure(fig, path, "plot", dpi=110)
    plt.close(fig)


def _fmt(v: Optional[float], digits: int = 1, signed: bool = True) -> str:
    if v is None:
        return "-"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def _fmt_norm(value: Optional[float], low: Optional[float], high: Optional[float]) -> str:
    if value is None or value != value:
        return "-"
    return f"{value:.2f}" + ("" if low is None or high is None else f" [{low:.2f}, {high:.2f}]")


def _fmt_value(d: Optional[dict]) -> str:
    """A signals measure (value, low, high) in three decimals; '-' where it was not measured."""
    if not d or d.get("value") is None:
        return "-"
    return f"{_fmt(d['value'], 3, False)} [{_fmt(d['low'], 3, False)}, {_fmt(d['high'], 3, False)}]"


def _fmt_iv(d: dict, digits: int = 1) -> str:
    return f"{_fmt(d['mean'], digits)} [{_fmt(d['low'], digits)}, {_fmt(d['high'], digits)}]"


def report_markdown(summary: dict) -> str:
    cross = summary["crossplay"]
    lines = [f"Study `{summary['study']}`: {len(summary['runs'])} runs, training {summary['training_cpu_hours']:.3f} "
             f"CPU hours (the runs' training time, one thread each). Scores are points per hand against `{summary['reference']}` on {cross['deals']} duplicate "
             "deals, with 95% t intervals over deals (paired: every cell plays the same deals).", "",
             "| method | agents | self-play | cross-play | self-play minus cross-play |", "|---|---|---|---|---|"]
    for m in cross["methods"]:
        w = cross["within"][m]
        lines.append(f"| {m} | {w['agents']} | {_fmt_iv(w['self_play'])} | "
                     f"{_fmt_iv(w['cross_play']) if 'cross_play' in w else '-'} | "
                     f"{_fmt_iv(w['gap']) if 'gap' in w else '-'} |")
    lines += ["", "Cross-play between methods (row method's agent with the column method's, both seat orders):", "",
              "| | " + " | ".join(cross["methods"]) + " |", "|---" * (len(cross["methods"]) + 1) + "|"]
    for a in cross["methods"]:
        lines.append(f"| {a} | " + " | ".join(_fmt_iv(cross["between"][a][b]) for b in cross["methods"]) + " |")
    held = summary["held_out"]
    if held["runs"]:
        lines += ["", "Held-out partners (the held-out scenario of `spades-coop run`; normalised 0 = random in the "
                  "seat, 1 = the partner's own copy):", "", "| run | method | score [95%] | normalised |",
                  "|---|---|---|---|"]
        for name, r in held["runs"].items():
            lines.append(f"| {name} | {r['method']} | {_fmt(r['score'])} [{_fmt(r['low'])}, {_fmt(r['high'])}] | "
                         f"{_fmt_norm(r.get('normalised'), r.get('normalised_low'), r.get('normalised_high'))} |")
        lines += ["", "Per method, over its seeds (95% t intervals over the seeds; the normalised score weights every "
                  "held-out partner alike):", "",
                  "| method | mean score [95%] | best seed | mean normalised [95%] |", "|---|---|---|---|"]
        for m, r in held["methods"].items():
            seeds, norm = r.get("score_seeds"), r.get("normalised_seeds")
            score = _fmt_iv(seeds) if seeds else _fmt(r["score"])
            normalised = _fmt_norm(norm["mean"], norm["low"], norm["high"]) if norm else _fmt(r["normalised"], 2, False)
            lines.append(f"| {m} | {score} | {_fmt(r['best'])} | {normalised} |")
        if held.get("partners"):
            methods = list(held["methods"])
            lines += ["", "Beside each held-out partner: each method's mean over its seeds, and the partner's own copy in "
                      "the same seat (points per hand):", "", "| partner | its copy | " + " | ".join(methods) + " |",
                      "|---" * (len(methods) + 2) + "|"]
            for name, r in held["partners"].items():
                lines.append(f"| {name} | {_fmt(r['copy'])} | " + " | ".join(_fmt(r.get(m)) for m in methods) + " |")
    if summary["signals"]:
        lines += ["", "Signals (`spades-coop signals`; value [95%]; bits about the hand: what the bids tell about the "
                  "hand itself, a decoder's information minus a shuffled control; about the trick estimate: about "
                  "the heuristic's count of the hand's tricks; listening: the share of choices a partner's bid "
                  "changes, and the mean KL when it is swapped for another it would make on a similar hand):", "",
                  "| run | method | bits about the hand | about the trick estimate | listening | listening KL (bits) "
                  "| nil cover |", "|---|---|---|---|---|---|---|"]
        for name, s in summary["signals"].items():
            cells = [_fmt_value(s.get(k)) for k in ("bid_information_hand", "bid_information", "listening",
                                                   "listening_kl", "nil_cover")]
            lines.append(f"| {name} | {s['method']} | " + " | ".join(cells) + " |")
        if any("message_information_hand" in s for s in summary["signals"].values()):
            lines += ["", "Messages (the free signal, rules with `signals`; bits about the hand: what the sender's "
                      "message tells about its hand, the same decoder minus a shuffled control; listening: the "
                      "share of the partner's choices that another message changes, and the mean KL):", "",
                      "| run | method | message bits about the hand | message listening | message listening KL (bits) |",
                      "|---|---|---|---|---|"]
            for name, s in summary["signals"].items():
                cells = [_fmt_value(s.get(k)) for k in ("message_information_hand", "message_listening",
                                                       "message_listening_kl")]
                lines.append(f"| {name} | {s['method']} | " + " | ".join(cells) + " |")
    rating = summary.get("cooperative_rating")
    if rating:
        lines += ["", "Cooperative rating (from the cross-play matrix: the points a team gains with each agent as a "
                  f"partner, additive model over the mixed teams; mean of mixed teams {rating['mean']:+.1f} "
                  f"[{rating['mean_low']:+.1f}, {rating['mean_high']:+.1f}]; {rating['interval']}):", "",
                  "| agent | skill [95%] | with others [95%] | self-play bonus [95%] | fits best with |",
                  "|---|---|---|---|---|"]
        for r in rating["ratings"]:
            cells = [f"{r[k]:+.1f} [{r[k + '_low']:+.1f}, {r[k + '_high']:+.1f}]"
                     for k in ("skill", "partner_score", "self_play_bonus")]
            lines.append(f"| {r['agent']} | " + " | ".join(cells) + f" | {r['best_fit']} |")
    if "league" in summary:
        nash = {r["agent"]: r for r in summary["league"]["nash"]}
        lines += ["", "League (Bradley-Terry Elo and Nash average in points per hand, each with its 95% bootstrap "
                  "interval over deals):", "",
                  "| agent | Elo [95%] | Nash average [95%] |", "|---|---|---|"]
        for r in summary["league"]["ratings"]:
            n = nash[r["agent"]]
            nash_cell = f"{n['nash_average']:+.1f}" + (f" [{n['low']:+.1f}, {n['high']:+.1f}]" if "low" in n else "")
            lines.append(f"| {r['agent']} | {r['rating']:+.0f} [{r['low']:+.0f}, {r['high']:+.0f}] | {nash_cell} |")
    if summary["hypotheses"]:
        lines += ["", "Hypotheses (paired contrasts over deals):", "", "| hypothesis | contrast | value [95%] | supported |",
                  "|---|---|---|---|"]
        for h in summary["hypotheses"]:
            lines.append(f"| {h['hypothesis']} | {h['contrast']} | {_fmt_iv(h)} | {'yes' if h['supported'] else 'no'} |")
    return "\n".join(lines) + "\n"


def write_report(study) -> Path:
    """``results/report.md``, from the pieces analysed again (``summary.json`` is rewritten)."""
    if not (study.results_dir / "crossplay.json").is_file():
        raise StudyError(f"no results in {study.results_dir}: run --stage evaluate first")
    check_current(study)
    target = study.results_dir / "report.md"
    return write_text(target, report_markdown(analyse(study)), "report")


__all__ = ["evaluate_stage", "analyse", "crossplay_analysis", "held_out_analysis", "hypotheses", "report_markdown",
           "write_report", "study_suite"]
