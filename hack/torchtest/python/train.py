# The training script the torch test layer runs in place of an image's: it joins the process
# group from the environment the pod was given (env://: MASTER_ADDR, MASTER_PORT, RANK,
# WORLD_SIZE, set by Trainyard or by torchrun), all-reduces its rank over gloo and prints one
# result line the test reads.
import datetime
import json
import os
import socket
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=120))
rank, world = dist.get_rank(), dist.get_world_size()
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
}
# One write of the whole line: torchrun's workers share the pod's stdout, and a print's text and
# its newline can be two writes that another worker's line lands between.
sys.stdout.flush()
os.write(1, ("TRAINYARD_RESULT " + json.dumps(result, sort_keys=True) + "\n").encode())
dist.barrier()
dist.destroy_process_group()
