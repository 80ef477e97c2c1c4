# The training script the torch test layer runs in place of an image's: it joins the process
# group from the environment the pod was given (env://: MASTER_ADDR, MASTER_PORT, RANK,
# WORLD_SIZE, set by Trainyard or by torchrun), all-reduces its rank over gloo and prints one
# result line the test reads.
import datetime
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

# --steps N: train for N steps of an all-reduce and a pause each, printing "TRAINYARD_STEP <rank>
# <step> <world size>" after every one, so that a test can fail or scale a replica mid-training.
steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 0

# --hold FILE: train on past N steps while FILE exists in the working directory, which the pods
# share: a test that adds a pod mid-training holds the training until the pod has joined, which
# on a busy machine may take longer than N steps.
hold = sys.argv[sys.argv.index("--hold") + 1] if "--hold" in sys.argv else None

# --fail-first N: the pod's first N starts raise RuntimeError (exit 1) before they join, as a container failing on
# a cause outside it would (a data server down); the starts are counted in the file
# fail-count-<hostname> of the working directory, which the pods share (fail-count-<hostname>-<local
# rank> for torchrun's local ranks past the first, each counting its own starts).
if "--fail-first" in sys.argv:
    counter = f"fail-count-{socket.gethostname()}"
    if os.environ.get("LOCAL_RANK", "0") != "0":
        counter += f"-{os.environ['LOCAL_RANK']}"
    starts = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
    with open(counter, "w") as f:
        f.write(str(starts))
    if starts <= int(sys.argv[sys.argv.index("--fail-first") + 1]):
        print(f"TRAINYARD_FAIL start {starts}", flush=True)
        # An uncaught exception, as a real failure would be: Python prints its traceback and
        # exits 1; its last line is what the test expects the job to quote.
        raise RuntimeError(f"start {starts} fails as asked (--fail-first)")

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
rank, world = dist.get_rank(), dist.get_world_size()
step, held = 0, hold is not None
while step < steps or held:
    # The step's all-reduce carries whether the rank still sees the hold file: held while any
    # does, so every rank decides alike and none leaves the loop while another goes on.
    flags = torch.tensor([1.0 if hold and os.path.exists(hold) else 0.0])
    dist.all_reduce(flags)
    held = flags.item() > 0
    os.write(1, f"TRAINYARD_STEP {rank} {step} {world}\n".encode())
    time.sleep(0.25)
    step += 1
total = torch.tensor([float(rank)])
dist.all_reduce(total)
result = {
    "hostname": socket.gethostname(),
    "rank": rank,
    "world": world,
    "env_rank": os.environ.get("RANK"),
    "env_world_size": os.environ.get("WORLD_SIZE"),
    "env_local_rank": os.environ.get("LOCAL_RANK"),
    "env_group_rank": os.environ.get("GROUP_RANK"),
    "sum": int(total.item()),
    "restart_count": os.environ.get("TORCHELASTIC_RESTART_COUNT"),
    "argv": sys.argv[1:],
}
# One write of the whole line: torchrun's workers share the pod's stdout, and a print's text and
# its newline can be two writes that another worker's line lands between.
sys.stdout.flush()
os.write(1, ("TRAINYARD_RESULT " + json.dumps(result, sort_keys=True) + "\n").encode())
dist.barrier()
dist.destroy_process_group()
