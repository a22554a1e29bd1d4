"""agents.specs: the one parser of agent specs, shared by every command."""

import pytest

from agents.specs import AgentSpecError, make_agent, parse_agent_spec, parse_value


def test_specs_read_names_and_typed_options():
    assert parse_agent_spec("heuristic") == ("heuristic", {})
    assert parse_agent_spec(" search:worlds=200, seed=3,budget=strong,infer_bids=off,max_time=none,min_gain=1e-3") == (
        "search", {"worlds": 200, "seed": 3, "budget": "strong", "infer_bids": False, "max_time": None,
                   "min_gain": 0.001})
    assert parse_value("2.5") == 2.5 and parse_value("yes") is True and parse_value("runs/x.pt") == "runs/x.pt"


@pytest.mark.parametrize("spec, message", [
    ("", "expected a registry name"),
    (None, "expected a registry name"),
    (":worlds=2", "no agent name before ':'"),
    ("search:", "nothing after ':'"),
    ("search:worlds", "option 'worlds' is not key=value"),
    ("search:worlds=1,worlds=2", "option 'worlds' is given twice"),
])
def test_bad_specs_are_explained(spec, message):
    with pytest.raises(AgentSpecError, match=message):
        parse_agent_spec(spec)


def test_make_agent_checks_the_name_and_the_options():
    assert make_agent("search:worlds=7", seed=1).worlds == 7
    with pytest.raises(AgentSpecError, match=r"unknown agent 'serch' \(did you mean 'search'\?\).*registered agents: .*heuristic"):
        make_agent("serch")
    with pytest.raises(AgentSpecError, match="search:wrlds=7"):
        make_agent("search:wrlds=7")


def test_every_command_uses_the_same_parser():
    import play.cli
    import evaluation
    import web.table
    assert play.cli.parse_agent_spec is parse_agent_spec
    assert evaluation.Player.of("search:worlds=3").factory.keywords == parse_agent_spec("search:worlds=3")[1]
    assert not hasattr(evaluation, "parse_agent_spec")         # one parser: agents.specs
    with pytest.raises(evaluation.EvaluationError, match="given twice"):
        evaluation.Player.of("random:x=1,x=2")
    with pytest.raises(web.table.TableError, match="given twice"):
        web.table.parse_agent_spec("a:x=1,x=2")
