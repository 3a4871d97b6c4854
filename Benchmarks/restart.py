#!/usr/bin/env python3
"""A restarted daemon's first answer and the end of its check against the
disk, for two builds alternately (3 rounds each).

    MDQ_BUILDS=AFTER_DIR:BEFORE_DIR python3 Benchmarks/restart.py [CORPUS]

Each round starts `mdq daemon run --no-content` on private folders,
indexes CORPUS (default /tmp/mdq-corpus/c1000000), stops it (it saves its
snapshot), starts it again and times how long until it answers, and until
`mdq daemon status` no longer says it is checking the index.
"""
import os, subprocess, sys, tempfile, time, shutil
corpus = sys.argv[1] if len(sys.argv) > 1 else "/tmp/mdq-corpus/c1000000"
def measure(build):
    mdq = os.path.join(build, "mdq")
    state = tempfile.mkdtemp(prefix="mdq-restart-")
    env = dict(os.environ, MDQ_RUNTIME_DIR=os.path.join(state, "run"), MDQ_STATE_DIR=os.path.join(state, "state"))
    def start():
        d = subprocess.Popen([mdq, "daemon", "run", "--no-content"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while subprocess.run([mdq, "daemon", "status"], env=env, capture_output=True).returncode != 0: time.sleep(0.02)
        return d
    d = start()
    subprocess.run([mdq, "index", "add", corpus], env=env, capture_output=True, check=True)
    while "checking" in subprocess.run([mdq, "daemon", "status"], env=env, capture_output=True, text=True).stdout: time.sleep(0.05)
    stop = subprocess.Popen([mdq, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); d.wait(); stop.wait()
    t0 = time.monotonic(); d = start(); t1 = time.monotonic()
    while "checking" in subprocess.run([mdq, "daemon", "status"], env=env, capture_output=True, text=True).stdout: time.sleep(0.05)
    t2 = time.monotonic()
    stop = subprocess.Popen([mdq, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); d.wait(); stop.wait()
    shutil.rmtree(state, ignore_errors=True)
    return t1 - t0, t2 - t0
for r in range(3):
    builds = os.environ.get("MDQ_BUILDS", ".build/mdq-release").split(":")
    for name, build in zip(["after", "before"], builds):
        a, v = measure(build)
        print(f"{name}: answering after {a:.3f} s, verified after {v:.2f} s", flush=True)
