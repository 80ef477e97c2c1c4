#!/usr/bin/env python3
"""Compares two snapshots normalized by normalize.py (the peer's first, Trainyard's second) and
prints, per job, what differs: the conditions (type, status, reason, message, in order), the
replica counts, start/completion times, the pods and Services that exist, each pod's env per
container, ports, restartPolicy, schedulerName, hostname and subdomain, the PodGroups, and the
job's events (once or repeated), the rest of each pod's spec and containers (image, command,
resources, volumes...) and, last, figures by kind. Labels and annotations are summed up over every object (key: peer -> trainyard,
with a count), as they differ the same way everywhere.

    hack/parity/compare.py .devcluster/parity/peer.50s.yaml .devcluster/parity/trainyard.50s.yaml
"""
import collections, sys, yaml

def load(f):
    return {k: v for d in yaml.safe_load_all(open(f)) if d for k, v in d.items()}

peer, ty = load(sys.argv[1]), load(sys.argv[2])
meta = collections.Counter()
figures = collections.Counter()  # differences by kind: jobs for status, pods and the like, else lines

def status(x):
    s = x.get("status") or {}
    conds = [f'{c["type"]}={c["status"]} {c.get("reason")}: {c.get("message")}' for c in s.get("conditions", [])]
    reps = {t: {k: v for k, v in r.items() if k in ("active", "succeeded", "failed")}
            for t, r in (s.get("replicaStatuses") or {}).items()}
    times = [k for k in ("startTime", "completionTime") if s.get(k)]
    return conds, reps, times

# Annotations whose value is a digest, which differs with every object: compared set or unset.
HASHED = ("batch.tensorstack.dev/applied-intent",)

def keyed(a, b, what, job):
    """Adds a's and b's differing keys to meta, the job's name in a value written <job>."""
    for k in sorted(set(a or {}) | set(b or {})):
        va, vb = (a or {}).get(k), (b or {}).get(k)
        if va != vb:
            va, vb = (v.replace(job, "<job>") if isinstance(v, str) else v for v in (va, vb))
            if k in HASHED:
                va, vb = (v and "<hash>" for v in (va, vb))
            meta[f"{what} {k}: {va!r} -> {vb!r}"] += 1

for j in sorted(set(peer) | set(ty)):
    a, b = peer.get(j), ty.get(j)
    job, out = j.split("/", 1)[1], []
    if a is None or b is None:
        print(f"== {j}: only in {'trainyard' if a is None else 'the peer'}")
        figures["job only in one"] += 1
        continue
    for name, va, vb in zip(("conditions", "replicas", "times"), status(a), status(b)):
        if va != vb:
            out += [f"  {name}:", f"    peer: {va}", f"    ty:   {vb}"]
            figures[name] += 1
    for kind in ("pods", "services", "podgroups"):
        if sorted(a.get(kind, {})) != sorted(b.get(kind, {})):
            out += [f"  {kind}: peer {sorted(a.get(kind, {}))}", f"  {kind}: ty   {sorted(b.get(kind, {}))}"]
            figures[kind] += 1
    for n in sorted(set(a["pods"]) & set(b["pods"])):
        pa, pb = a["pods"][n], b["pods"][n]
        keyed(pa["labels"], pb["labels"], "pod label", job)
        keyed(pa["annotations"], pb["annotations"], "pod annotation", job)
        for k in sorted(set(pa.get("more", {})) | set(pb.get("more", {}))):
            va, vb = pa.get("more", {}).get(k), pb.get("more", {}).get(k)
            if va != vb:
                meta[f"pod {k}: {va!r} -> {vb!r}"] += 1
        for k in ("restartPolicy", "schedulerName", "hostname", "subdomain"):
            if pa[k] != pb[k]:
                meta[f"pod {k}: {pa[k]!r} -> {pb[k]!r}"] += 1
        for c in sorted(set(pa["containers"]) | set(pb["containers"])):
            ca, cb = pa["containers"].get(c), pb["containers"].get(c)
            if ca is None or cb is None:
                out.append(f"  {n} {c}: {'only in trainyard' if ca is None else 'only in the peer'}")
                figures["container"] += 1
                continue
            for e in sorted(set(ca["env"]) | set(cb["env"])):
                if ca["env"].get(e) != cb["env"].get(e):
                    out.append(f"  {n} {c} env {e}: {ca['env'].get(e)!r} -> {cb['env'].get(e)!r}")
                    figures["env"] += 1
            for k in sorted(set(ca.get("more", {})) | set(cb.get("more", {}))):
                if ca.get("more", {}).get(k) != cb.get("more", {}).get(k):
                    out.append(f"  {n} {c} {k}: {ca['more'].get(k)!r} -> {cb['more'].get(k)!r}")
                    figures["container fields"] += 1
            both = set(ca.get("envOrder", [])) & set(cb.get("envOrder", []))
            if [e for e in ca.get("envOrder", []) if e in both] != [e for e in cb.get("envOrder", []) if e in both]:
                meta["pod env order (of the variables both set)"] += 1
            if ca["ports"] != cb["ports"]:
                out.append(f"  {n} {c} ports: {ca['ports']} -> {cb['ports']}")
                figures["ports"] += 1
    for n in sorted(set(a["services"]) & set(b["services"])):
        sa, sb = a["services"][n], b["services"][n]
        keyed(sa["labels"], sb["labels"], "service label", job)
        keyed(sa["selector"], sb["selector"], "service selector", job)
        for k in ("clusterIP", "ports", "publishNotReadyAddresses"):
            if sa[k] != sb[k]:
                meta[f"service {k}: {sa[k]!r} -> {sb[k]!r}"] += 1
    for n in sorted(set(a.get("podgroups", {})) & set(b.get("podgroups", {}))):
        keyed(a["podgroups"][n].get("labels"), b["podgroups"][n].get("labels"), "podgroup label", job)
        keyed(a["podgroups"][n].get("annotations"), b["podgroups"][n].get("annotations"), "podgroup annotation", job)
        ga, gb = a["podgroups"][n]["spec"], b["podgroups"][n]["spec"]
        if ga != gb:
            out.append(f"  podgroup {n}: {ga} -> {gb}")
            figures["podgroup spec"] += 1
    if a.get("hpas") != b.get("hpas"):
        out += [f"  hpas peer: {a.get('hpas')}", f"  hpas ty:   {b.get('hpas')}"]
        figures["hpas"] += 1
    ea = [e for e in a["events"] if not e.startswith("Pod ")]
    eb = [e for e in b["events"] if not e.startswith("Pod ")]
    if ea != eb:
        out += ["  events peer:"] + [f"    {e}" for e in ea] + ["  events ty:"] + [f"    {e}" for e in eb]
        figures["events"] += 1
    if out:
        print(f"== {j}")
        print("\n".join(out))
print("== labels, annotations and pod fields, over every object (count)")
for k, v in sorted(meta.items()):
    print(f"  {v:4d} {k}")
print("== figures: jobs whose conditions, replicas, times, pod or Service names, HPA or events differ;")
print("   env, ports, container, podgroup spec: lines; meta: the distinct lines above")
figures["meta"] = len(meta)
print("  " + ", ".join(f"{k} {v}" for k, v in sorted(figures.items())))
