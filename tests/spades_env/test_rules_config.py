"""Rule sets: presets, overrides, YAML files, validation (docs/rules.md "Presets" and every variant)."""

import dataclasses

import pytest

import spades_env
from spades_env import PRESET_NAMES, Rules, RulesError, make_rules, spades_v0

# What docs/rules.md says the standard game is ("everything above with its defaults").
STANDARD = {
    "players": 4,
    "partnerships": True,
    "nil": True,
    "blind_nil": True,
    "blind_nil_min_deficit": 100,
    "blind_nil_pass": 2,
    "min_team_bid": 0,
    "bids_may_total_13": True,
    "no_spades_first_trick": False,
    "two_of_clubs_leads": False,
    "spades_lead": "broken",
    "nil_tricks_count_for_partner": False,
    "nil_bonus": 100,
    "blind_nil_bonus": 200,
    "bags": True,
    "bag_limit": 10,
    "bag_penalty": 100,
    "target_score": 500,
    "mercy_score": -200,
    "max_hands": None,
}


def settings(rules: Rules, keys=STANDARD) -> dict:
    return {k: getattr(rules, k) for k in keys}


def differences(a: Rules, b: Rules) -> set:
    return {f.name for f in dataclasses.fields(Rules)
            if f.name != "name" and getattr(a, f.name) != getattr(b, f.name)}


# ---------------------------------------------------------------- presets

def test_all_presets_are_named():
    assert set(PRESET_NAMES) >= {"standard", "basic", "tournament", "cutthroat", "openspiel"}


def test_standard_preset():
    rules = make_rules("standard")
    assert settings(rules) == STANDARD
    assert rules.num_sides == 2
    assert rules.tricks_per_hand == 13 and rules.cards_per_hand == 13
    assert rules.fixed_dealer is None  # the first dealer is drawn, then rotates
    assert make_rules() == rules and make_rules(None) == rules


def test_default_env_is_standard():
    env = spades_v0.raw_env()
    assert settings(env.rules) == STANDARD


def test_basic_preset():
    rules = make_rules("basic")
    assert rules.nil is False and rules.blind_nil is False
    # "otherwise standard"
    assert differences(rules, make_rules("standard")) == {"nil", "blind_nil"}


def test_tournament_preset():
    rules = make_rules("tournament")
    assert rules.min_team_bid == 4
    assert rules.no_spades_first_trick is True
    # "standard plus": nothing else changes (nil, blind nil, breaking, bags, target, mercy...)
    assert differences(rules, make_rules("standard")) == {"min_team_bid", "no_spades_first_trick"}


def test_cutthroat_preset():
    rules = make_rules("cutthroat")
    assert rules.players == 4
    assert rules.partnerships is False
    assert rules.nil is True
    assert rules.blind_nil is False
    assert rules.blind_nil_pass == 0
    assert rules.num_sides == 4
    assert [rules.side_of(s) for s in range(4)] == [0, 1, 2, 3]


def test_openspiel_preset():
    rules = make_rules("openspiel")
    assert rules.fixed_dealer == 3
    assert rules.max_team_bid == 13
    assert rules.nil_tricks_count_for_partner is True
    assert rules.blind_nil is False
    assert rules.nil is True
    assert rules.spades_lead == "forced_only"
    assert rules.target_score == 500
    assert rules.mercy_score == -350
    assert rules.bags_from_score_digit is True
    assert rules.episode == "hand"
    assert rules.partnerships is True and rules.players == 4
    assert spades_v0.raw_env(rules="openspiel").episode == "hand"


@pytest.mark.parametrize("name", ["standard", "basic", "tournament", "cutthroat", "openspiel"])
def test_preset_names_through_env(name):
    env = spades_v0.raw_env(rules=name)
    assert env.rules == make_rules(name)
    env.reset(seed=1)
    assert env.phase in ("bidding", "blind_nil_decision")


def test_rules_object_through_env():
    rules = make_rules("basic")
    env = spades_v0.raw_env(rules=rules)
    assert env.rules == rules


# ---------------------------------------------------------------- overrides

def test_keyword_overrides():
    rules = make_rules("standard", target_score=300, mercy_score=None, max_hands=40, bag_penalty=50)
    assert rules.target_score == 300 and rules.mercy_score is None and rules.bag_penalty == 50
    assert differences(rules, make_rules("standard")) == {"target_score", "mercy_score", "max_hands", "bag_penalty"}


def test_override_on_top_of_preset():
    rules = make_rules("tournament", min_team_bid=5)
    assert rules.min_team_bid == 5 and rules.no_spades_first_trick is True


def test_override_through_env():
    env = spades_v0.raw_env(rules="basic", target_score=250, spades_lead="any")
    assert env.rules.target_score == 250
    assert env.rules.spades_lead == "any"
    assert env.rules.nil is False


def test_rules_replace():
    rules = make_rules("standard").replace(max_hands=3)
    assert rules.max_hands == 3


def test_mapping_with_preset_base():
    rules = make_rules({"preset": "tournament", "target_score": 300})
    assert rules.min_team_bid == 4 and rules.no_spades_first_trick is True
    assert rules.target_score == 300


def test_mapping_without_preset_is_standard_based():
    rules = make_rules({"nil": False, "blind_nil": False})
    assert differences(rules, make_rules("basic")) == set()


# ---------------------------------------------------------------- YAML files

def test_yaml_file(tmp_path):
    path = tmp_path / "short.yaml"
    path.write_text("target_score: 250\nmercy_score: -100\nspades_lead: any\n")
    rules = make_rules(path)
    assert rules.target_score == 250 and rules.mercy_score == -100 and rules.spades_lead == "any"
    assert differences(rules, make_rules("standard")) == {"target_score", "mercy_score", "spades_lead"}
    assert make_rules(str(path)) == rules


def test_yaml_file_with_preset_base(tmp_path):
    path = tmp_path / "cut.yml"
    path.write_text("preset: cutthroat\ntarget_score: 200\n")
    rules = make_rules(path)
    assert rules.partnerships is False and rules.blind_nil is False and rules.blind_nil_pass == 0
    assert rules.target_score == 200


def test_yaml_file_through_env_with_override(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("preset: tournament\nbag_limit: 5\n")
    env = spades_v0.raw_env(rules=str(path), bag_penalty=50)
    assert env.rules.min_team_bid == 4
    assert env.rules.bag_limit == 5 and env.rules.bag_penalty == 50


def test_yaml_unknown_rule_names_it(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("target_scor: 300\n")
    with pytest.raises(RulesError, match="target_scor"):
        make_rules(path)


def test_yaml_wrong_type_names_setting(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("preset: standard\nnil: maybe\n")
    with pytest.raises(RulesError, match="nil"):
        make_rules(path)


def test_yaml_unknown_preset_names_it(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("preset: speedy\n")
    with pytest.raises(RulesError, match="speedy"):
        make_rules(path)


def test_yaml_not_a_mapping(tmp_path):
    path = tmp_path / "list.yaml"
    path.write_text("- nil\n- blind_nil\n")
    with pytest.raises(RulesError, match="mapping"):
        make_rules(path)


def test_yaml_missing_file(tmp_path):
    with pytest.raises(RulesError, match="missing.yaml"):
        make_rules(tmp_path / "missing.yaml")


# ---------------------------------------------------------------- errors

def test_rules_error_is_a_value_error():
    assert issubclass(RulesError, ValueError)
    assert spades_env.RulesError is RulesError


def test_unknown_preset():
    with pytest.raises(RulesError, match="nope"):
        make_rules("nope")


def test_unknown_preset_in_mapping():
    with pytest.raises(RulesError, match="nope"):
        make_rules({"preset": "nope"})


@pytest.mark.parametrize("bad", ["target_scor", "blind_nill", "jokers"])
def test_unknown_rule_names_it(bad):
    with pytest.raises(RulesError, match=bad):
        make_rules("standard", **{bad: 1})
    with pytest.raises(RulesError, match=bad):
        make_rules({bad: 1})


@pytest.mark.parametrize("setting,value", [
    ("target_score", "x"),
    ("target_score", 500.5),
    ("mercy_score", "low"),
    ("nil", "yes"),
    ("nil", 1),
    ("bags", None),
    ("players", "4"),
    ("bag_limit", 1.5),
    ("spades_lead", "sometimes"),
    ("spades_lead", 3),
    ("max_hands", "ten"),
    ("blind_nil_pass", True),
])
def test_wrong_type_or_value_names_the_setting(setting, value):
    with pytest.raises(RulesError, match=setting):
        make_rules("standard", **{setting: value})


@pytest.mark.parametrize("overrides,setting", [
    ({"players": 5}, "players"),
    ({"players": 2}, "players"),
    ({"blind_nil_pass": 4}, "blind_nil_pass"),
    ({"blind_nil_pass": -1}, "blind_nil_pass"),
    ({"bag_limit": 0}, "bag_limit"),
    ({"target_score": 0}, "target_score"),
    ({"max_hands": 0}, "max_hands"),
    ({"blind_nil_min_deficit": -5}, "blind_nil_min_deficit"),
])
def test_out_of_range_names_the_setting(overrides, setting):
    with pytest.raises(RulesError, match=setting):
        make_rules("standard", **overrides)


@pytest.mark.parametrize("base,overrides,setting", [
    # three players have no partnerships
    ("standard", {"players": 3}, "partnerships"),
    ("standard", {"players": 3, "blind_nil": False}, "partnerships"),
    # blind nil is a nil bid
    ("standard", {"nil": False}, "blind_nil"),
    ("basic", {"blind_nil": True}, "blind_nil"),
    # the two of clubs is removed in the three-player game
    ("cutthroat", {"players": 3, "two_of_clubs_leads": True}, "two_of_clubs_leads"),
    # the mercy score must lie below the target
    ("standard", {"mercy_score": 500}, "mercy_score"),
    ("standard", {"mercy_score": 600}, "mercy_score"),
    ("standard", {"target_score": 100, "mercy_score": 100}, "mercy_score"),
    ("standard", {"target_score": -300}, "target_score"),
    # cutthroat has no partner to pass to / team minimum
    ("cutthroat", {"blind_nil": True}, "blind_nil"),
    ("cutthroat", {"min_team_bid": 4}, "min_team_bid"),
    # without nil both partners bid at least 1: a team maximum of 1 leaves the second no bid
    ("basic", {"max_team_bid": 1}, "max_team_bid"),
    # a nil bidder's tricks can count for a partner only where there is one
    ("cutthroat", {"nil_tricks_count_for_partner": True}, "nil_tricks_count_for_partner"),
    ("cutthroat", {"players": 3, "nil_tricks_count_for_partner": True}, "nil_tricks_count_for_partner"),
])
def test_contradictory_settings_name_the_setting(base, overrides, setting):
    with pytest.raises(RulesError, match=setting):
        make_rules(base, **overrides)


def test_consistent_variants_are_accepted():
    make_rules("cutthroat", players=3)
    make_rules("standard", nil=False, blind_nil=False)
    make_rules("standard", mercy_score=None, max_hands=100)
    make_rules("standard", mercy_score=499)
    make_rules("standard", target_score=9_800, mercy_score=-200)       # exactly GAME_SPAN_LIMIT apart
    make_rules("standard", target_score=10 ** 6, mercy_score=None, max_hands=20)
    make_rules("standard", blind_nil_pass=0)
    make_rules("standard", blind_nil_pass=3)
    make_rules("standard", bids_may_total_13=False, two_of_clubs_leads=True, no_spades_first_trick=True)
    make_rules("standard", spades_lead="any")
    make_rules("standard", spades_lead="forced_only")


@pytest.mark.parametrize("overrides, message", [
    ({"target_score": 10 ** 6, "mercy_score": None}, r"rule target_score=1000000 is invalid: expected at most "
                                                      r"10,000 points \(GAME_SPAN_LIMIT\) under mercy_score: null"),
    ({"target_score": 10_001, "mercy_score": None}, r"rule target_score=10001 is invalid"),
    ({"target_score": 9_801}, r"rule target_score=9801 is invalid: expected at most 10,000 points above "
                              r"mercy_score \(-200\) \(GAME_SPAN_LIMIT\), or max_hands set"),
    ({"target_score": 500, "mercy_score": -10 ** 6}, r"rule target_score=500 is invalid: expected at most 10,000"),
])
def test_a_rule_set_whose_games_need_not_end_is_refused(overrides, message):
    """Random play under mercy_score: null never ends a game (scores fall forever): without a
    mercy score close enough to the target, a rule set needs max_hands."""
    with pytest.raises(RulesError, match=message):
        make_rules("standard", **overrides)
    make_rules("standard", max_hands=200, **overrides)          # a cap ends every game


def test_mercy_null_without_a_cap_gets_one_so_that_every_game_ends():
    """The rule book's variant mercy_score: null stays playable: a game is truncated after
    MERCYLESS_HANDS_CAP hands unless the rule set names its own max_hands."""
    from spades_env.rules import MERCYLESS_HANDS_CAP
    rules = make_rules("standard", mercy_score=None)
    assert rules.mercy_score is None and rules.max_hands == MERCYLESS_HANDS_CAP
    assert make_rules("standard", mercy_score=None, target_score=300, max_hands=7).max_hands == 7
    assert make_rules(rules.to_dict()) == rules
    assert make_rules("standard").max_hands is None


def test_three_players_derived_quantities():
    rules = make_rules("cutthroat", players=3)
    assert rules.cards_per_hand == 17 and rules.tricks_per_hand == 17 and rules.num_sides == 3


def test_rules_are_immutable():
    rules = make_rules("standard")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules.target_score = 100


# ---------------------------------------------------------------- through the env

def test_env_unknown_preset():
    with pytest.raises(RulesError, match="nope"):
        spades_v0.raw_env(rules="nope")


def test_env_wrong_type_override():
    with pytest.raises(RulesError, match="target_score"):
        spades_v0.raw_env(target_score="x")


def test_env_unknown_override():
    with pytest.raises(RulesError, match="blind_nill"):
        spades_v0.raw_env(blind_nill=False)


def test_env_contradiction():
    with pytest.raises(RulesError, match="blind_nil_pass"):
        spades_v0.raw_env(rules="standard", blind_nil_pass=4)


def test_wrapped_env_rules_errors():
    with pytest.raises(RulesError, match="nope"):
        spades_v0.env(rules="nope")
    with pytest.raises(RulesError, match="target_score"):
        spades_v0.env(target_score="x")


@pytest.mark.parametrize("preset", ["standard", "basic", "tournament", "openspiel"])
@pytest.mark.parametrize("max_team_bid", [None, 1, 2, 3, 13])
def test_every_accepted_team_maximum_leaves_every_bidder_a_bid(preset, max_team_bid):
    """Rule sets that construct never leave a bidder without a legal bid (all bidding orders)."""
    from spades_env.game import PHASE_BIDDING, PHASE_BLIND_DECISION, SpadesGame
    try:
        rules = make_rules(preset, max_team_bid=max_team_bid)
    except RulesError as exc:
        assert "max_team_bid" in str(exc)       # refused, naming the setting
        return
    for seed in range(40):
        game = SpadesGame(rules, rng=seed)
        while game.phase in (PHASE_BIDDING, PHASE_BLIND_DECISION):
            legal = game.legal_actions()
            assert legal, f"no legal bid for seat {game.to_act} after bids {game.bids}"
            game.apply(legal[seed * 7 % len(legal)])
