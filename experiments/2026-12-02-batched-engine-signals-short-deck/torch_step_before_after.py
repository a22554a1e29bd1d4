# Setup: git archive 5b69e18 spades_env | tar -x -C /tmp/sigvec_orig; mkdir -p /tmp/sigvec/oldpkg; cp -r /tmp/sigvec_orig/spades_env /tmp/sigvec/oldpkg/spades_old
"""The torch step before issue 74 (the old package, renamed spades_old) and after, in one process on
identical tables, interleaved in short slices: decisions per CPU-second of each (eager, 1 thread)."""
import sys, time, torch
sys.path.insert(0, "/tmp/sigvec/oldpkg")
from spades_old.vector import SpadesVectorEnv as Before
from spades_env.vector import SpadesVectorEnv as After
from spades_env.vector_seats import pick_kth_legal
torch.set_num_threads(1)
B, SLICE, ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 1024, 10, 30
envs = {"before": Before(B, seed=0, check_actions=False), "after": After(B, seed=0, check_actions=False)}
masks = {k: e.reset()[1] for k, e in envs.items()}
g = torch.Generator().manual_seed(0)
spent = {k: 0.0 for k in envs}
decisions = 0
for r in range(ROUNDS):
    u = torch.rand(SLICE, B, generator=g)
    for k in (("before", "after") if r % 2 == 0 else ("after", "before")):
        env, mask = envs[k], masks[k]
        start = time.thread_time()
        for t in range(SLICE):
            obs, mask, *_ = env.step(pick_kth_legal(mask, u[t]))
        spent[k] += time.thread_time() - start
        masks[k] = mask
    assert torch.equal(masks["before"], masks["after"]) and torch.equal(envs["before"].state.hands, envs["after"].state.hands)
    decisions += SLICE * B
for k, s in spent.items():
    print(f"{k}: {decisions / s:,.0f} decisions per CPU-second ({decisions} decisions, the same tables)")
print(f"after / before: {spent['before'] / spent['after']:.3f}")
