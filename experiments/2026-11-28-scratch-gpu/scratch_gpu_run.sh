#!/usr/bin/env bash
# The device run of configs/scratch_gpu.yaml (issue 47): three seeds at once on one GPU for BUDGET
# seconds of training in all, then each seed's whole games (150 duplicate against the heuristic) and
# signals (bits about the hand, 100 deals) on the host's CPU cores. Results go to $OUT (one tarball).
#   OUT=/tmp/out BUDGET=400 bash experiments/2026-11-28-scratch-gpu/scratch_gpu_run.sh
# EXTRA adds spades-train --set options (a CPU rehearsal: EXTRA="--set device=cpu --set num_envs=64").
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/scratch_gpu_out}; BUDGET=${BUDGET:-400}; EXTRA=${EXTRA:-}; GAMES=${GAMES:-150}; DEALS=${DEALS:-100}
SEEDS=${SEEDS:-"1 2 3"}; WORKERS=${WORKERS:-5}; RUNS=${RUNS:-runs}
mkdir -p "$OUT/logs"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
start=$(date +%s)
train() {  # seed, extra --set options
  local s=$1; shift
  timeout ${LIMIT:-86400} python3 -m train.ppo.trainer --config configs/scratch_gpu.yaml --set seed=$s --set name=scratch_gpu_s$s \
    --set run_dir=$RUNS $EXTRA "$@" >> "$OUT/logs/train_s$s.log" 2>&1
}
# 1. two updates each, all seeds at once: the speed under the same sharing
for s in $SEEDS; do train $s --set max_updates=2 & done; wait
for s in $SEEDS; do
  if [ "$(wc -l < "$RUNS/scratch_gpu_s$s/metrics.csv" 2>/dev/null || echo 0)" -lt 3 ]; then
    echo "seed $s did not make two updates:"; tail -30 "$OUT/logs/train_s$s.log"; exit 1
  fi
done
per_update=$(python3 - "$RUNS" $SEEDS <<'PY'
import csv, sys
runs, seeds = sys.argv[1], sys.argv[2:]
times = []
for s in seeds:
    rows = list(csv.DictReader(open(f"{runs}/scratch_gpu_s{s}/metrics.csv")))
    times.append(float(rows[-1]["wall_s"]) - float(rows[-2]["wall_s"]))
print(max(times))
PY
)
per_dec=$(awk -F, 'NR==2{print $2}' "$RUNS/scratch_gpu_s${SEEDS%% *}/metrics.csv")   # decisions an update
left=$(( BUDGET - ($(date +%s) - start) - 30 ))   # 30 s for each run's start again and its model's export
updates=$(python3 -c "print(max(3, int($left / ($per_update * 1.08)) ))")
total=$(( updates * per_dec ))
echo "calibration: ${per_update}s an update (all seeds at once), ${left}s left -> $updates updates, $total decisions a seed"
# 2. the rest of the budget: resume each seed to the measured number of updates
LIMIT=$(( left + 90 ))   # a run still going then is stopped: its last checkpoint is evaluated
for s in $SEEDS; do train $s --resume --set total_decisions=$total --set max_updates=null & done; wait
echo "training done after $(( $(date +%s) - start ))s"
for s in $SEEDS; do tail -3 "$RUNS/scratch_gpu_s$s/metrics.csv" | cut -d, -f1-6; done
# 3. whole games and signals on the CPU cores, every seed at once
for s in $SEEDS; do
  ( m=$RUNS/scratch_gpu_s$s/model.pt
    [ -f "$m" ] || m=$RUNS/scratch_gpu_s$s/checkpoints/last.pt
    spec="neural:checkpoint=$m"
    python3 -c 'import sys; from evaluation.cli import main; sys.exit(main())' --team-a "$spec" --team-b heuristic \
      --games $GAMES --duplicate --workers $WORKERS --json "$OUT/logs/games_s$s.json" --quiet > "$OUT/logs/games_s$s.txt" 2>&1
    python3 -c 'import sys; from coop.cli import main; sys.exit(main())' signals "$spec" --deals $DEALS \
      --workers $WORKERS --json "$OUT/logs/signals_s$s.json" --quiet > "$OUT/logs/signals_s$s.txt" 2>&1 ) &
done; wait
echo "evaluation done after $(( $(date +%s) - start ))s"
for s in $SEEDS; do echo "== seed $s"; tail -25 "$OUT/logs/games_s$s.txt"; grep -i -A2 "about the hand\|bid_information_hand" "$OUT/logs/signals_s$s.txt" | head -8; done
for s in $SEEDS; do d=$RUNS/scratch_gpu_s$s; cp $d/metrics.csv "$OUT/logs/metrics_s$s.csv"; cp $d/config.yaml "$OUT/logs/config_s$s.yaml" 2>/dev/null
  [ -f $d/model.pt ] && cp $d/model.pt "$OUT/logs/model_s$s.pt"; done
tar -C "$OUT" -czf "$OUT/scratch_gpu.tgz" logs && rm -rf "$OUT/logs"
ls -la "$OUT"
