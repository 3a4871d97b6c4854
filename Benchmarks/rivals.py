#!/usr/bin/env python3
"""Runs Recoll, Tracker 3 and Baloo headless on one folder and measures
them as Benchmarks/content-compare.py measures mdq; prints one JSON object
per system.

    Benchmarks/rivals.py --corpus DIR --work DIR --rare WORD --common WORD --fresh-file REL
                         [--systems recoll,tracker,baloo]

Each system gets a private home and configuration under --work, so nothing
touches the user's own. Installs the Debian packages when missing.

- Recoll (1.34): `recollindex -c CONF` with `topdirs = DIR` (exits when
  done; /usr/bin/time gives its CPU and peak RSS, its filters included);
  queries `recollq -c CONF -b WORD`; freshness with the real-time monitor
  `recollindex -m -D -x` started before the change.
- Baloo (5.103): `baloo_file` in a private D-Bus session with a
  baloofilerc naming the corpus; done when `balooctl status` says Idle with
  nothing waiting; queries `baloosearch WORD`.
- Tracker 3 (3.4): `tracker-miner-fs-3` in a private D-Bus session with
  configuration files (see `tracker()` for the two silent traps); done when
  the miner and its extractor are both Idle for 2 s; queries
  `tracker3 search WORD`.
"""
import argparse, json, os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def index_add(mdq, args, env):
    """`mdq index add ARGS`, returned once the daemon has read every file's
    size and dates: since names first it answers once names do (a build
    from before, once it crawled), and a figure taken after it means a
    whole index."""
    result = subprocess.run([mdq, "index", "add"] + args, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"mdq index add failed: {result.stderr}")
    while "reading the sizes and dates" in run([mdq, "daemon", "status"], env=env).stdout:
        time.sleep(0.01)
    return result


def ensure(packages, binaries):
    if all(shutil.which(b) for b in binaries):
        return
    subprocess.run(["apt-get", "install", "-y", "-qq"] + packages, check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def median_query(args, runs=5, env=None):
    times, out = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        result = run(args, env=env)
        times.append(time.perf_counter() - start)
        out = result.stdout
    return statistics.median(times), out


def du(path):
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


def recoll(args):
    # Image metadata (ExifTool) and audio tags (mutagen) are read by
    # Recoll's filters when these are present: install them, as a user
    # wanting those properties would.
    ensure(["recoll", "libimage-exiftool-perl", "python3-mutagen"], ["recollindex", "recollq"])
    conf = os.path.join(args.work, "recoll")
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, "recoll.conf"), "w") as f:
        f.write("topdirs = %s\nloglevel = 1\n" % args.corpus)
    start = time.perf_counter()
    timed = run(["/usr/bin/time", "-f", "%U %S %M", "recollindex", "-c", conf])
    index_seconds = time.perf_counter() - start
    user, system, rss_kb = timed.stderr.strip().splitlines()[-1].split()
    query = lambda word: ["recollq", "-c", conf, "-b", word]
    rare_seconds, rare_out = median_query(query(args.rare))
    common_seconds, common_out = median_query(query(args.common))
    count = lambda out: sum(1 for line in out.splitlines() if line.startswith("file://"))
    store = du(conf)
    # Freshness: the real-time monitor, started first and given time to
    # set its watches (its own log says when it is ready is not exposed).
    monitor = subprocess.Popen(["recollindex", "-c", conf, "-m", "-D", "-x"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(5)
    fresh = fresh_seconds(args, lambda word: count(run(query(word)).stdout) > 0)
    os.killpg(monitor.pid, signal.SIGTERM)
    try:
        monitor.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(monitor.pid, signal.SIGKILL)
        monitor.wait()
    version = run(["recollindex", "-v"]).stdout.strip() or run(["recollq", "-v"]).stdout.strip()
    return {
        "system": "recoll", "version": version.splitlines()[0] if version else "recoll",
        "index_seconds": index_seconds, "cpu_seconds": float(user) + float(system),
        "peak_rss_bytes": int(rss_kb) * 1024, "store_bytes": store,
        "rare_query_seconds": rare_seconds, "rare_results": count(rare_out),
        "common_query_seconds": common_seconds, "common_results": count(common_out),
        "freshness_seconds": fresh,
        "notes": "recollindex with its stock filters (pdftotext, python3 office filters, ExifTool, mutagen); "
                 "freshness with recollindex -m (real-time monitor); CPU and RSS of recollindex and its filters",
    }


def fresh_seconds(args, found, deadline=120):
    """Appends a new word to the fresh file, waits until `found(word)`."""
    target = os.path.join(args.corpus, args.fresh_file)
    word = "freshzq%d" % int(time.time() * 1000 % 1e9)
    with open(target, "rb") as f:
        original = f.read()
    with open(target, "ab") as f:
        f.write(("\n%s\n" % word).encode())
    written = time.perf_counter()
    seconds = None
    while time.perf_counter() - written < deadline:
        if found(word):
            seconds = time.perf_counter() - written
            break
        time.sleep(0.1)
    with open(target, "wb") as f:
        f.write(original)
    return seconds


def tracker(args):
    # GNOME's Tracker 3.4 (tracker-miner-fs-3, which has D-Bus start
    # tracker-extract-3 for content) runs headless in a private D-Bus
    # session with private XDG folders and TRACKER_USE_CONFIG_FILES=1.
    # Three things are easy to get silently wrong:
    # - the configuration files are GKeyFiles with a [General] group, the
    #   GSettings key names and GVariant text values
    #   (`index-recursive-directories=['/dir']`); anything else is ignored
    #   without a word and the miner indexes its defaults;
    # - the XDG variables must be set before the bus starts, so that the
    #   services it starts on demand (tracker-extract-3) see them;
    # - the miner skips configured folders under the temporary folder
    #   (g_get_tmp_dir(), in tracker-miner-files.c), so TMPDIR points
    #   elsewhere: the corpus usually lives in /tmp.
    # tracker-extract reads text/plain only from *.txt, *.md and *.mdwn
    # unless told otherwise: `text-allowlist=['*']` gives it every text
    # file, as mdq and Recoll read them. Both processes run at nice 19 and
    # SCHED_IDLE (their own choice), which nothing else here competes with.
    # Done when the miner and the extractor have both said Idle for 2 s
    # (they pause between batches); `tracker3 status` says "indexing
    # complete" even with nothing configured, so it is not the test.
    ensure(["tracker", "tracker-miner-fs", "tracker-extract", "dbus", "libglib2.0-bin"],
           ["tracker3", "/usr/libexec/tracker-miner-fs-3", "gdbus"])
    root = os.path.join(args.work, "tracker")
    shutil.rmtree(root, ignore_errors=True)
    env = dict(os.environ, HOME=os.path.join(root, "home"), XDG_CONFIG_HOME=os.path.join(root, "config"),
               XDG_DATA_HOME=os.path.join(root, "data"), XDG_CACHE_HOME=os.path.join(root, "cache"),
               XDG_RUNTIME_DIR=os.path.join(root, "run"), TMPDIR=os.path.join(root, "tmp"),
               TRACKER_USE_CONFIG_FILES="1")
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "TMPDIR"):
        os.makedirs(env[key], mode=0o700, exist_ok=True)
    config = os.path.join(env["XDG_CONFIG_HOME"], "tracker")
    os.makedirs(config, exist_ok=True)
    with open(os.path.join(config, "tracker-miner-fs-3.cfg"), "w") as f:
        f.write("[General]\nindex-recursive-directories=['%s']\nindex-single-directories=@as []\n"
                "index-applications=false\ninitial-sleep=0\nthrottle=0\nenable-monitors=true\n"
                "low-disk-space-limit=-1\n" % args.corpus.rstrip("/"))
    with open(os.path.join(config, "tracker-extract-3.cfg"), "w") as f:
        f.write("[General]\ntext-allowlist=['*']\nmax-bytes=1048576\n")
    bus = run(["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"], env=env).stdout.split()
    env["DBUS_SESSION_BUS_ADDRESS"], bus_pid = bus[0], int(bus[1])

    def on_bus(name):
        return name in run(["gdbus", "call", "--session", "-d", "org.freedesktop.DBus", "-o", "/org/freedesktop/DBus",
                            "-m", "org.freedesktop.DBus.ListNames"], env=env).stdout

    def status(miner):
        return run(["gdbus", "call", "--session", "-d", "org.freedesktop.Tracker3.Miner." + miner, "-o",
                    "/org/freedesktop/Tracker3/Miner/" + miner, "-m", "org.freedesktop.Tracker3.Miner.GetStatus"],
                   env=env).stdout.strip()

    def session_processes():
        # The extractor is the bus's, not the miner's child: found by its
        # environment.
        mark = ("DBUS_SESSION_BUS_ADDRESS=" + env["DBUS_SESSION_BUS_ADDRESS"]).encode()
        found = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and mark in open("/proc/%s/environ" % entry, "rb").read().split(b"\0"):
                    found.append(int(entry))
            except OSError:
                pass
        return found

    start = time.perf_counter()
    miner = subprocess.Popen(["/usr/libexec/tracker-miner-fs-3"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    while not on_bus("org.freedesktop.Tracker3.Miner.Files") and time.perf_counter() - start < 60:
        time.sleep(0.05)
    cpu, rss = {}, 0
    started, idle_since = False, None
    while time.perf_counter() - start < 3600:
        for pid in session_processes():
            cpu[pid] = max(cpu.get(pid, 0.0), cpu_seconds(pid))
            rss = max(rss, peak_rss(pid))
        files, extract = status("Files"), status("Extract")
        started = started or (files != "" and "Initializing" not in files)
        if started and files == "('Idle',)" and extract == "('Idle',)":
            idle_since = idle_since or time.perf_counter()
            if time.perf_counter() - idle_since > 2.0:
                break
        else:
            idle_since = None
        time.sleep(0.2)
    index_seconds = (idle_since or time.perf_counter()) - start
    counted = run(["tracker3", "sparql", "-b", "org.freedesktop.Tracker3.Miner.Files", "-q",
                   "SELECT (COUNT(DISTINCT ?f) AS ?n) (COUNT(DISTINCT ?c) AS ?t) WHERE { ?f a nfo:FileDataObject ; "
                   "nie:url ?u . OPTIONAL { ?f nie:interpretedAs/nie:plainTextContent ?c } "
                   "FILTER(STRSTARTS(?u, \"file://%s/\")) }" % args.corpus.rstrip("/")], env=env).stdout
    numbers = re.findall(r"\d+", counted.split("\n", 1)[-1])
    count = lambda out: sum(1 for line in out.splitlines() if line.strip().startswith("file://"))
    query = lambda word: ["tracker3", "search", "--disable-color", "--disable-snippets", "--limit", "100000", word]
    rare_seconds, rare_out = median_query(query(args.rare), env=env)
    common_seconds, common_out = median_query(query(args.common), env=env)
    fresh = fresh_seconds(args, lambda word: count(run(query(word), env=env).stdout) > 0)
    store = du(os.path.join(env["XDG_CACHE_HOME"], "tracker3"))
    for pid in session_processes():
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    try:
        miner.wait(timeout=10)
    except subprocess.TimeoutExpired:
        miner.kill()
    os.kill(bus_pid, signal.SIGTERM)
    return {
        "system": "tracker", "version": "Tracker " + run(["dpkg-query", "-W", "-f", "${Version}",
                                                           "tracker-miner-fs"]).stdout,
        "index_seconds": index_seconds, "cpu_seconds": sum(cpu.values()), "peak_rss_bytes": rss, "store_bytes": store,
        "rare_query_seconds": rare_seconds, "rare_results": count(rare_out),
        "common_query_seconds": common_seconds, "common_results": count(common_out),
        "freshness_seconds": fresh,
        "notes": "tracker-miner-fs-3 and tracker-extract-3 headless (private D-Bus session, text-allowlist=['*']); "
                 "%s files indexed, %s with text; both run at nice 19, SCHED_IDLE by their own choice"
                 % tuple((numbers + ["?", "?"])[:2]),
    }


class Client:
    """The daemon protocol over a daemon's socket (a user's own, or the
    system index's), as whoever runs it."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.buffer = b""
        self.next = 1

    def ask(self, request):
        request = dict(request, id=self.next)
        self.next += 1
        self.sock.sendall(json.dumps(request).encode() + b"\n")
        while True:
            while b"\n" not in self.buffer:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise RuntimeError("the daemon went away")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            reply = json.loads(line)
            if "error" in reply or reply.get("done") or "status" in reply:
                return reply
            if "bytes" in reply:
                want = reply["bytes"]
                while len(self.buffer) < want:
                    self.buffer += self.sock.recv(1 << 16)
                self.buffer = self.buffer[want:]


def cpu_seconds(pid, children=True):
    """User and system seconds of a process, and of its children it has
    reaped (with `children`)."""
    try:
        fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15 if children else 13]) / os.sysconf("SC_CLK_TCK")


def children_of(pid):
    """The processes whose parent is `pid`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open("/proc/%s/stat" % entry).read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def peak_rss(pid):
    """A process's peak resident bytes (VmHWM); 0 once it is gone."""
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def baloo(args):
    # KDE's Baloo 5.103 runs headless: baloo_file (the indexer, which
    # starts baloo_file_extractor for content) in a private D-Bus session,
    # private XDG folders, a baloofilerc naming the corpus, Qt's offscreen
    # platform. Done when `balooctl status` says Idle with no file waiting
    # for content indexing.
    ensure(["baloo-kf5", "dbus"], ["baloo_file", "balooctl", "baloosearch"])
    root = os.path.join(args.work, "baloo")
    env = dict(os.environ, HOME=os.path.join(root, "home"), XDG_CONFIG_HOME=os.path.join(root, "config"),
               XDG_DATA_HOME=os.path.join(root, "data"), XDG_CACHE_HOME=os.path.join(root, "cache"),
               QT_QPA_PLATFORM="offscreen")
    for key in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"):
        os.makedirs(env[key], exist_ok=True)
    with open(os.path.join(env["XDG_CONFIG_HOME"], "baloofilerc"), "w") as f:
        f.write("[General]\ndbVersion=2\nexclude filters version=8\nfolders[$e]=%s/\nonly basic indexing=false\n"
                "first run=false\n\n[Basic Settings]\nIndexing-Enabled=true\n" % args.corpus.rstrip("/"))
    bus = run(["dbus-daemon", "--session", "--fork", "--print-address=1", "--print-pid=1"], env=env).stdout.split()
    env["DBUS_SESSION_BUS_ADDRESS"], bus_pid = bus[0], int(bus[1])
    start = time.perf_counter()
    indexer = subprocess.Popen(["baloo_file"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rss, extractor_cpu = 0, {}
    status = ""
    while time.perf_counter() - start < 1800:
        for line in run(["pgrep", "-f", "baloo_file_extractor"]).stdout.split():
            extractor_cpu[int(line)] = cpu_seconds(int(line))
            rss = max(rss, peak_rss(int(line)))
        status = run(["balooctl", "status"], env=env).stdout
        if "Indexer state: Idle" in status and "waiting for content indexing: 0" in status \
                and "Total files indexed: 0" not in status:
            break
        time.sleep(0.5)
    index_seconds = time.perf_counter() - start
    cpu = cpu_seconds(indexer.pid) + sum(extractor_cpu.values())
    rss = max(rss, peak_rss(indexer.pid))
    count = lambda out: sum(1 for line in out.splitlines() if line.startswith("/"))
    query = lambda word: ["baloosearch", word]
    rare_seconds, rare_out = median_query(query(args.rare), env=env)
    common_seconds, common_out = median_query(query(args.common), env=env)
    fresh = fresh_seconds(args, lambda word: count(run(query(word), env=env).stdout) > 0)
    store = du(os.path.join(env["XDG_DATA_HOME"], "baloo"))
    indexer.terminate()
    try:
        indexer.wait(timeout=10)
    except subprocess.TimeoutExpired:
        indexer.kill()
    subprocess.run(["pkill", "-f", "baloo_file_extractor"])
    os.kill(bus_pid, signal.SIGTERM)
    files = next((line for line in status.splitlines() if "Total files indexed" in line), "")
    return {
        "system": "baloo", "version": "Baloo " + run(["dpkg-query", "-W", "-f", "${Version}", "baloo-kf5"]).stdout,
        "index_seconds": index_seconds, "cpu_seconds": cpu, "peak_rss_bytes": rss, "store_bytes": store,
        "rare_query_seconds": rare_seconds, "rare_results": count(rare_out),
        "common_query_seconds": common_seconds, "common_results": count(common_out),
        "freshness_seconds": fresh,
        "notes": "baloo_file and baloo_file_extractor headless (private D-Bus session); %s; Baloo paces its "
                 "extractor by design (batches, idle detection)" % files.strip(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--rare", required=True)
    parser.add_argument("--common", required=True)
    parser.add_argument("--fresh-file", required=True)
    parser.add_argument("--systems", default="recoll,tracker,baloo")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    for system in args.systems.split(","):
        row = {"recoll": recoll, "tracker": tracker, "baloo": baloo}[system](args)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
