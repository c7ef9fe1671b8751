#!/usr/bin/python3
"""Checks the CI templates (ci-templates/) and runs the cuvil commands they use.

    check_ci_templates.py SRC_ROOT CUVIL REPO_DIR WORK_DIR

1. Structure: GitHub composite actions (name, description, runs.using:
   composite, steps with `uses` or `run` + `shell`, described inputs),
   the reusable workflow (on.workflow_call with typed inputs and described
   secrets, jobs with runs-on and steps), example workflows, the GitLab
   component (spec.inputs, then jobs whose $[[ inputs.X ]] are declared) and
   the classic include (a hidden job with a JUnit report).
2. Every `cuvil ...` command in a run/script block: its sub-command exists
   and `cuvil <cmd> --help` names every --flag it uses.
3. The commands that need no server run, in template order, in REPO_DIR (a
   git repository of models, some broken), with the templates' variables
   bound to test values; exit 1 (errors in the models) is what a template
   reports, 2 and 3 are failures.  The JUnit XML they write is parsed and
   checked against the farm's jobs and failures.

Exit status 0 when everything holds; failures are printed one per line.
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET

import yaml

ERRORS = []


def err(where, what):
    ERRORS.append("%s: %s" % (where, what))


def load_all(path):
    with open(path) as f:
        return list(yaml.safe_load_all(f))


def on_key(doc):
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1)
    return doc.get("on", doc.get(True))


def check_steps(where, steps):
    if not isinstance(steps, list) or not steps:
        err(where, "no steps")
        return
    for i, st in enumerate(steps):
        if "uses" not in st and "run" not in st:
            err(where, "step %d has neither uses nor run" % i)
        if "run" in st and "shell" not in st and where.endswith("action.yml"):
            err(where, "step %d: a composite action's run step needs a shell" % i)


def check_action(path, doc):
    for key in ("name", "description", "runs"):
        if key not in doc:
            err(path, "no %s" % key)
    if doc.get("runs", {}).get("using") != "composite":
        err(path, "runs.using is not composite")
    for name, inp in (doc.get("inputs") or {}).items():
        if "description" not in inp:
            err(path, "input %s has no description" % name)
    for name, out in (doc.get("outputs") or {}).items():
        if "value" not in out:
            err(path, "output %s has no value" % name)
    check_steps(path, doc.get("runs", {}).get("steps"))


def check_workflow(path, doc):
    on = on_key(doc)
    if on is None:
        err(path, "no on:")
    call = on.get("workflow_call") if isinstance(on, dict) else None
    if call is not None:
        for name, inp in (call.get("inputs") or {}).items():
            if inp.get("type") not in ("string", "boolean", "number"):
                err(path, "input %s has no valid type" % name)
        for name, sec in (call.get("secrets") or {}).items():
            if "description" not in (sec or {}):
                err(path, "secret %s has no description" % name)
    jobs = doc.get("jobs") or {}
    if not jobs:
        err(path, "no jobs")
    for name, job in jobs.items():
        if "uses" in job:
            continue
        if "runs-on" not in job:
            err(path, "job %s has no runs-on" % name)
        check_steps(path, job.get("steps"))


def check_gitlab_component(path, docs):
    if len(docs) != 2 or "spec" not in docs[0]:
        err(path, "a component is a spec document, then the jobs")
        return
    declared = set((docs[0]["spec"].get("inputs") or {}).keys())
    text = open(path).read().split("\n---\n", 1)[1]
    for used in re.findall(r"\$\[\[\s*inputs\.([A-Za-z0-9_-]+)\s*\]\]", text):
        if used not in declared:
            err(path, "input %s is used but not declared" % used)
    check_gitlab_jobs(path, docs[1])


def check_gitlab_jobs(path, doc):
    jobs = {k: v for k, v in doc.items() if isinstance(v, dict) and "script" in v}
    if not jobs:
        err(path, "no job with a script")
    for name, job in jobs.items():
        if not isinstance(job["script"], list):
            err(path, "job %s: script is not a list" % name)
        if job.get("artifacts", {}).get("reports", {}).get("junit") is None:
            err(path, "job %s has no JUnit report" % name)


def script_lines(node):
    """Every run/script text under node, line by line, in order."""
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("run", "script") and isinstance(v, str):
                out += v.splitlines()
            elif k == "script" and isinstance(v, list):
                out += [s for s in v if isinstance(s, str)]
            else:
                out += script_lines(v)
    elif isinstance(node, list):
        for v in node:
            out += script_lines(v)
    return out


def cuvil_commands(lines):
    cmds = []
    for line in lines:
        for part in re.split(r"\|\||&&|;", line):
            part = part.strip()
            if part.startswith("cuvil "):
                cmds.append(part)
    return cmds


BINDINGS = {
    "${WORKERS:-$(nproc)}": "2", "$CUVIL_WORKERS": "2", "$[[ inputs.workers ]]": "2",
    "$GITHUB_STEP_SUMMARY": "summary.md",
}


def bind(cmd):
    for k, v in BINDINGS.items():
        cmd = cmd.replace(k, v)
    return cmd


def help_text(cuvil, sub):
    p = subprocess.run([cuvil, sub, "--help"], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def check_flags(cuvil, cmds):
    for cmd in cmds:
        words = shlex.split(bind(cmd))
        sub = words[1]
        rc, text = help_text(cuvil, sub)
        if rc != 0:
            err(cmd, "`cuvil %s --help` fails" % sub)
            continue
        for w in words[2:]:
            if w.startswith("--") and not re.search(re.escape(w) + r"\b", text):
                err(cmd, "cuvil %s does not document %s" % (sub, w))


def run_local(cuvil, cmds, repo, work):
    """Runs the commands that need no farm server; returns the JUnit paths."""
    junits = []
    env = dict(os.environ, NO_COLOR="1")
    for cmd in cmds:
        words = shlex.split(bind(cmd))
        if "--farm" in words:
            continue   # needs a farm's HTTP API
        out_path, mode = None, "w"
        for redir in (">>", ">"):
            if redir in words:
                i = words.index(redir)
                out_path, mode = os.path.join(work, words[i + 1]), "a" if redir == ">>" else "w"
                words = words[:i]
                break
        args = [cuvil]
        for w in words[1:]:
            if any(c in w for c in "*?["):   # the shell's glob
                matches = sorted(glob.glob(os.path.join(repo, w)))
                args += [os.path.relpath(m, repo) for m in matches] or [w]
            else:
                args.append(w)
        p = subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True)
        if out_path:
            with open(out_path, mode) as f:
                f.write(p.stdout)
        # 1 = errors in the models, which the templates report and pass on
        if p.returncode not in (0, 1):
            err(cmd, "exit %d: %s" % (p.returncode, (p.stdout + p.stderr)[-800:]))
        if "--junit" in words:
            junits.append(os.path.join(repo, words[words.index("--junit") + 1]))
    return junits


def check_junit(path, cuvil, repo):
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        err(path, "not JUnit XML: %s" % e)
        return
    cases = root.findall("./testsuite/testcase")
    p = subprocess.run([cuvil, "status", "--json", "--state", ".cuvil-farm"], cwd=repo,
                       capture_output=True, text=True)
    rev = json.loads(p.stdout)["revision"]
    jobs, failed = rev["jobs"], rev["failed"]
    if root.tag != "testsuites" or len(cases) != jobs or int(root.get("tests")) != jobs:
        err(path, "%d test cases for %d jobs" % (len(cases), jobs))
    failures = root.findall("./testsuite/testcase/failure")
    if len(failures) != failed or int(root.get("failures")) != failed:
        err(path, "%d failures for %d failed jobs" % (len(failures), failed))
    for f in failures:
        if not re.match(r"CV\d{4}$", f.get("type", "")) or not f.get("message"):
            err(path, "a failure without its diagnostic code and message")
    for c in cases:
        if not c.get("name") or not c.get("classname"):
            err(path, "a test case without name or classname")


def main():
    src, cuvil, repo, work = sys.argv[1:5]
    root = os.path.join(src, "ci-templates")
    files = sorted(glob.glob(os.path.join(root, "**", "*.yml"), recursive=True))
    if not files:
        err(root, "no templates")
    lines = []
    for path in files:
        docs = load_all(path)
        rel = os.path.relpath(path, src)
        if rel.endswith("action.yml"):
            check_action(rel, docs[0])
        elif "/github/" in rel:
            check_workflow(rel, docs[0])
        elif "/gitlab/templates/" in rel:
            check_gitlab_component(rel, docs)
        else:
            check_gitlab_jobs(rel, docs[0])
        for d in docs:
            lines += script_lines(d)
    hooks = load_all(os.path.join(src, ".pre-commit-hooks.yaml"))[0]
    lines += [h["entry"] + " models/x.cuir" for h in hooks]
    cmds = cuvil_commands(lines)
    subs = {shlex.split(c)[1] for c in cmds}
    for needed in ("validate", "farm", "status"):
        if needed not in subs:
            err("ci-templates", "no template runs cuvil %s" % needed)
    check_flags(cuvil, cmds)
    for j in run_local(cuvil, [c for c in cmds if " models/x.cuir" not in c], repo, work):
        check_junit(j, cuvil, repo)
    for e in ERRORS:
        print(e)
    print("%d templates, %d cuvil commands, %d problems" % (len(files), len(cmds), len(ERRORS)))
    sys.exit(1 if ERRORS else 0)


if __name__ == "__main__":
    main()
