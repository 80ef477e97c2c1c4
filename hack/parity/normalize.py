#!/usr/bin/env python3
"""Reduce a snapshot (kubectl get -o json of jobs, pods, services, events) to what the operators
are compared on: one YAML document per job, free of names the API server makes up (uids,
resourceVersions, IPs, timestamps: a timestamp becomes "<set>")."""
import json, sys, yaml

snap = json.load(open(sys.argv[1]))
TS = ("lastTransitionTime", "lastUpdateTime", "startTime", "completionTime", "lastReconcileTime")

def ts(d):
    if isinstance(d, dict):
        return {k: ("<set>" if k in TS and v else ts(v)) for k, v in d.items()}
    if isinstance(d, list):
        return [ts(x) for x in d]
    return d

def owner(o):
    for r in o["metadata"].get("ownerReferences", []):
        if r.get("controller"):
            return r["kind"] + "/" + r["name"]
    lab = o["metadata"].get("labels", {})
    return lab.get("training.kubeflow.org/job-name")

def drop(d, keys):
    return {k: v for k, v in (d or {}).items() if k not in keys}

# What else of a pod a user sees, beside what pod() names: compared whole (the service-account
# token volume, named at random by the API server, left out).
POD_MORE = ("volumes", "serviceAccountName", "priorityClassName", "affinity", "nodeSelector",
            "tolerations", "securityContext", "enableServiceLinks", "terminationGracePeriodSeconds")
CONTAINER_MORE = ("image", "command", "args", "resources", "volumeMounts", "workingDir", "imagePullPolicy")

def no_token(xs):
    return [x for x in xs or [] if not x.get("name", "").startswith("kube-api-access-")] or None

def pod(p):
    s = p["spec"]
    out = {
        "labels": p["metadata"].get("labels"),
        "annotations": drop(p["metadata"].get("annotations"), ()),
        "hostname": s.get("hostname"), "subdomain": s.get("subdomain"),
        "restartPolicy": s.get("restartPolicy"), "schedulerName": s.get("schedulerName"),
        "phase": p["status"].get("phase"),
        "deleting": bool(p["metadata"].get("deletionTimestamp")),
        "containers": {},
        "more": {k: (no_token(s.get(k)) if k == "volumes" else s.get(k)) for k in POD_MORE},
    }
    for kind in ("initContainers", "containers"):
        for c in s.get(kind, []):
            out["containers"][kind + "/" + c["name"]] = {
                "env": {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])},
                "envOrder": [e["name"] for e in c.get("env", [])],
                "ports": c.get("ports"),
                "more": {k: (no_token(c.get(k)) if k == "volumeMounts" else c.get(k)) for k in CONTAINER_MORE},
            }
    return out

def svc(v):
    s = v["spec"]
    return {"labels": v["metadata"].get("labels"), "clusterIP": s.get("clusterIP"),
            "selector": s.get("selector"), "ports": s.get("ports"),
            "publishNotReadyAddresses": s.get("publishNotReadyAddresses")}

jobs = {}
for j in snap["jobs"]:
    key = j["kind"] + "/" + j["metadata"]["name"]
    st = j.get("status", {})
    jobs[key] = {"status": ts(st), "pods": {}, "services": {}, "events": {}, "podgroups": {}}
for kind, f in (("pods", pod), ("services", svc)):
    for o in snap[kind]:
        k = owner(o)
        if not k:
            continue
        if "/" not in k:
            k = next((x for x in jobs if x.endswith("/" + k)), "?/" + k)
        jobs.setdefault(k, {"gone": True, "pods": {}, "services": {}, "events": {}})[kind][o["metadata"]["name"]] = f(o)
for g in snap.get("podgroups", []):
    k = owner(g)
    if k in jobs:
        jobs[k]["podgroups"][g["apiVersion"] + " " + g["metadata"]["name"]] = {"labels": g["metadata"].get("labels"), "annotations": g["metadata"].get("annotations"), "spec": g["spec"]}
for h in snap.get("hpas", []):
    k = owner(h)
    if k in jobs:
        jobs[k].setdefault("hpas", {})[h["metadata"]["name"]] = {"labels": h["metadata"].get("labels"), "spec": h["spec"]}
for e in snap["events"]:
    io = e["involvedObject"]
    name = io["name"]
    k = io["kind"] + "/" + name
    if io["kind"] not in ("PyTorchJob", "TFJob"):
        base = name.rsplit("-", 2)[0]
        k = next((x for x in jobs if x.split("/", 1)[1] == base), None)
        if not k:
            continue
    ev = jobs.setdefault(k, {"gone": True, "pods": {}, "services": {}, "events": {}})["events"]
    line = f'{io["kind"]} {e["type"]} {e["reason"]}: {e.get("message","")}'
    ev[line] = ev.get(line, 0) + e.get("count", 1) if not e.get("series") else e["series"]["count"]
for k in sorted(jobs):
    # How often an event was written shows in kubectl describe (x12): kept as once or repeated,
    # as the exact count depends on timing.
    jobs[k]["events"] = sorted(e + (" (repeated)" if n > 1 else "") for e, n in jobs[k]["events"].items())
    print("---")
    print(yaml.safe_dump({k: jobs[k]}, sort_keys=True, width=200), end="")
