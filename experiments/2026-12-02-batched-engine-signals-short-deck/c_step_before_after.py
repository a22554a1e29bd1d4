# Setup: git archive 5b69e18 spades_env | tar -x -C /tmp/sigvec_orig; then (cd /tmp/sigvec_orig/spades_env/native && cc -O3 -march=native -shared -fPIC -std=c99 -fno-strict-aliasing -fopenmp -o /tmp/sigvec/old_engine.so engine.c heuristic.c search.c solver.c)
"""The C step before issue 74 (old_engine.so) and after (the working tree's), timed in one process
on identical tables, interleaved in short slices: decisions per CPU-second of each."""
import ctypes, time, torch
import spades_env.native as native
from spades_env.vector import SpadesVectorEnv
from spades_env.native import random_legal
torch.set_num_threads(1)
import sys
B, SLICE, ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 256, 40, 40
old = ctypes.CDLL("/tmp/sigvec/old_engine.so")
old.spades_native_init()
old.spades_step_all.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int64] * 2 + [ctypes.c_void_p]
old.spades_step_all.restype = ctypes.c_int64
counts = (ctypes.c_int64 * 4)(); old.spades_native_counts(counts)
OLD_PARAMS = counts[0]
OLD_STATE = [f for f in native.STATE_FIELDS if f != "messages"]

class OldStepper(native.NativeStepper):
    """The same stepper, calling the old library with its own pointer and parameter layout."""
    def __init__(self, env):
        super().__init__(env, 1)
        self.old_params = self.params[:OLD_PARAMS].clone()
        self.old_pointers = (ctypes.c_void_p * (len(OLD_STATE) + len(native.BUFFERS)))()
    def step(self, actions):
        env, B = self.env, self.env.num_envs
        obs = torch.empty(B, env.obs_size); mask = torch.empty(B, 68, dtype=torch.uint8)
        rewards = torch.empty(B, 4, dtype=torch.float64); done = torch.empty(B, dtype=torch.uint8)
        final = torch.empty(B, 2, dtype=torch.int64); winner = torch.empty(B, dtype=torch.int64)
        new_ptr = torch.empty((), dtype=torch.int64)
        self._point(actions, rewards, done, final, winner)
        self.pointers[len(native.STATE_FIELDS) + 6] = obs.data_ptr()
        self.pointers[len(native.STATE_FIELDS) + 7] = mask.data_ptr()
        skip = native.STATE_FIELDS.index("messages")
        values = [self.pointers[i] for i in range(len(self.pointers)) if i != skip]
        for i, v in enumerate(values):
            self.old_pointers[i] = v
        status = old.spades_step_all(self.old_params.data_ptr(), self.dparams_ptr, ctypes.addressof(self.old_pointers),
                                     self.sizes_address, 1, int(env._pool_ptr), new_ptr.data_ptr())
        assert status == 0, status
        return new_ptr, obs, mask, rewards, done.view(torch.bool), final, winner

envs = {"before": SpadesVectorEnv(B, seed=0, backend="native", check_actions=False, threads=1),
        "after": SpadesVectorEnv(B, seed=0, backend="native", check_actions=False, threads=1)}
envs["before"]._native = OldStepper(envs["before"])
masks = {k: e.reset()[1] for k, e in envs.items()}
g = torch.Generator().manual_seed(0)
spent = {k: 0.0 for k in envs}
decisions = 0
for r in range(ROUNDS):
    u = torch.rand(SLICE, B, generator=g)
    order = ("before", "after") if r % 2 == 0 else ("after", "before")
    for k in order:
        env, mask = envs[k], masks[k]
        start = time.thread_time()
        for t in range(SLICE):
            obs, mask, *_ = env.step(random_legal(mask, u[t]))
        spent[k] += time.thread_time() - start
        masks[k] = mask
    assert torch.equal(masks["before"], masks["after"]) and torch.equal(envs["before"].state.hands, envs["after"].state.hands)
    decisions += SLICE * B
for k, s in spent.items():
    print(f"{k}: {decisions / s:,.0f} decisions per CPU-second ({decisions} decisions, the same tables)")
print(f"after / before: {spent['before'] / spent['after']:.3f}")
