#!/usr/bin/env python3
"""The shared index across hosts (issue 38), measured in one run.

    Benchmarks/multihost.py --images DIR [--hosts 10] [--runs 10] [--trials 100] [--out FILE]

DIR holds host0.img ... host9.img, each an ext4 filesystem of its own with
a generated tree of a million files, made beforehand:

    for k in 0 1 2 3 4 5 6 7 8 9; do
      truncate -s 6G DIR/host$k.img && mkfs.ext4 -q -N 1300000 -O ^has_journal DIR/host$k.img
      mount -o loop DIR/host$k.img /mnt && Benchmarks/make-tree.py /mnt/home --files 1000000 \\
          --seed $((100 + k)) --container --sparse && umount /mnt
    done

As root, it simulates the hosts on this machine:

- starts a private PostgreSQL 15 cluster (initdb in a temporary folder, a
  Unix socket, as the postgres user) and creates the shared index in it
  (`mdq shared init`);
- gives each host a mount and UTS namespace of its own (`unshare --mount
  --uts`), held by a sleeping process: its own host name, its image
  loop-mounted, and its own /etc/machine-id, /run/mdq and /var/lib/mdq
  bound in; in each, `mdq system run --mount MNT --publish URL --search
  URL` (the system index, its publisher, and the searches across hosts it
  answers for its users), started together;
- the initial publish: from the start until every host is live in the
  shared index (its crawl included), and each host's own publish time
  from its log; then the same indexes published again, into an empty
  shared index, by each system index restarted from the index it saved
  (the publish alone, as on hosts already running); the shared index's
  size per entry, indexes included;
- as an ordinary user (`nobody`) on host 1 (`nsenter` into its
  namespaces), per invocation of the `mdq` command, median of --runs:
  a rare word across all hosts, the `*.png` count across all hosts, the
  first 100 paths of an unselective query, answered by host 1's system
  index (the user has no database credential of their own) and with the
  user's own credential (`MDQ_SHARED`: the full command connects itself);
  beside the same question in raw SQL (`psql`, unfiltered) and the local
  daemon's answer for host 1;
- sustained changes on host 0 (files created as fast as one process can)
  and the rate at which they reach the shared index;
- freshness: a file created on host 0, and the time until `mdq --host
  host0` run on host 1 finds it (p50, p99 of --trials);
- a host back after 10,000 changes made while its system index was
  stopped: the rows its publisher sends, and whether it reloaded.

Needs the release programs (Scripts/build-release stages them in
.build/mdq-release; $MDQ_BUILD names another folder), PostgreSQL 15,
unshare, nsenter and setpriv.
"""
import argparse
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
BUILD = os.environ.get("MDQ_BUILD", os.path.join(TOP, ".build/mdq-release"))
MDQ = os.path.join(BUILD, "mdq")
PG = "/usr/lib/postgresql/15/bin"


def say(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def as_postgres(command, **kw):
    return subprocess.run(["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"] + command,
                          stdin=subprocess.DEVNULL, **kw)


class Cluster:
    def __init__(self, work):
        self.folder = f"{work}/pg"
        os.makedirs(self.folder)
        shutil.chown(self.folder, "postgres", "postgres")
        os.chmod(self.folder, 0o755)
        as_postgres([f"{PG}/initdb", "-D", f"{self.folder}/data", "-U", "postgres", "--auth=trust",
                     "--encoding=UTF8", "--locale=C.UTF-8"], check=True, capture_output=True)
        options = (f"-k {self.folder} -c listen_addresses='' -c shared_buffers=4GB -c maintenance_work_mem=1GB "
                   "-c max_wal_size=16GB -c checkpoint_timeout=30min -c max_connections=200")
        as_postgres([f"{PG}/pg_ctl", "-D", f"{self.folder}/data", "-l", f"{self.folder}/log", "-w", "-o", options,
                     "start"], check=True, capture_output=True)
        self.sql("CREATE DATABASE shared", database="postgres")
        self.url = f"postgresql:///shared?host={self.folder}&user=postgres"

    def sql(self, query, database="shared"):
        result = subprocess.run(["psql", "-h", self.folder, "-U", "postgres", "-d", database, "-tAqc", query],
                                capture_output=True, text=True, check=True)
        return result.stdout.strip()

    def stop(self):
        as_postgres([f"{PG}/pg_ctl", "-D", f"{self.folder}/data", "-m", "fast", "stop"], capture_output=True)


class Host:
    """A simulated host: a namespace held by a sleeping process, its image
    mounted inside, its system index started in it."""

    def __init__(self, k, image, work, url):
        self.name = f"host{k}"
        self.image = image
        self.mount = f"{work}/{self.name}/mnt"
        self.folder = f"{work}/{self.name}"
        self.url = url
        for sub in ["mnt", "run", "state"]:
            os.makedirs(f"{self.folder}/{sub}", exist_ok=True)
        with open(f"{self.folder}/machine-id", "w") as f:
            f.write(secrets.token_hex(16) + "\n")
        script = (f"hostname {self.name} && mount -o loop {image} {self.mount} && "
                  f"mount --bind {self.folder}/machine-id /etc/machine-id && "
                  f"mount --bind {self.folder}/run /run/mdq && mount --bind {self.folder}/state /var/lib/mdq && "
                  "exec sleep infinity")
        self.holder = subprocess.Popen(["unshare", "--mount", "--uts", "--propagation", "private", "sh", "-c", script])
        # Until the image is mounted in it.
        deadline = time.time() + 30
        while time.time() < deadline:
            check = self.run(["mountpoint", "-q", self.mount])
            if check.returncode == 0:
                break
            time.sleep(0.1)
        else:
            sys.exit(f"{self.name}: its image did not mount")
        self.daemon = None

    def command(self, command, user=None):
        enter = ["nsenter", "-t", str(self.holder.pid), "-m", "-u", "--"]
        if user:
            enter += ["setpriv", f"--reuid={user}", "--regid=65534", "--clear-groups"]
        return enter + command

    def run(self, command, user=None, **kw):
        return subprocess.run(self.command(command, user), capture_output=True, text=True, **kw)

    def start(self):
        self.log = open(f"{self.folder}/system.log", "a")
        self.daemon = subprocess.Popen(
            self.command([MDQ, "system", "run", "--mount", self.mount, "--publish", self.url, "--search", self.url]),
            stdout=self.log, stderr=self.log, env=dict(os.environ, HOME="/nonexistent"))

    def stop(self):
        if self.daemon and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=300)
        self.daemon = None

    def log_text(self):
        return open(f"{self.folder}/system.log").read()

    def close(self):
        self.stop()
        self.holder.kill()
        self.holder.wait()


def wait_until_live(cluster, hosts):
    """Until every host is live in the shared index with its first publish
    swapped in; exits with a host's log if its system index exits."""
    while True:
        live = cluster.sql("SELECT count(*) FROM mdq.host WHERE state = 'live' AND generation > 0")
        if int(live or 0) == len(hosts):
            return
        for host in hosts:
            if host.daemon.poll() is not None:
                sys.exit(f"{host.name}'s system index exited:\n" + host.log_text())
        time.sleep(0.5)


def timed(command, runs, env=None, warmup=3):
    """The median of `runs` invocations, after `warmup` untimed ones (as
    hyperfine's --warmup: the first pays for caches the rest find warm)."""
    for _ in range(warmup):
        subprocess.run(command, capture_output=True, env=env)
    times = []
    out = ""
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - started)
        out = (result.stdout.strip() or result.stderr.strip())
    return statistics.median(times), out


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description="The shared index across hosts.")
    parser.add_argument("--images", required=True)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--storm", type=int, default=100_000, help="at most what the journal keeps (131,072)")
    parser.add_argument("--offline", type=int, default=10_000)
    parser.add_argument("--rare", default="chapter_7777")
    parser.add_argument("--keep", action="store_true", help="leave the hosts and the cluster running")
    parser.add_argument("--out", default=os.path.join(HERE, "results/multihost.md"))
    a = parser.parse_args()
    if a.hosts < 2:
        parser.error("--hosts: at least 2 (queries are asked on host 1 of the others)")
    if os.getuid() != 0:
        sys.exit("multihost.py: run as root (namespaces, loop mounts, fanotify)")
    work = tempfile.mkdtemp(prefix="mdq-multihost-")
    os.chmod(work, 0o755)
    for folder in ["/run/mdq", "/var/lib/mdq"]:
        os.makedirs(folder, exist_ok=True)
    say("the private PostgreSQL cluster")
    cluster = Cluster(work)
    subprocess.run([MDQ, "shared", "init", cluster.url], check=True, capture_output=True)
    hosts = [Host(k, os.path.join(a.images, f"host{k}.img"), work, cluster.url) for k in range(a.hosts)]
    # What an interrupted run made goes first.
    for host in hosts:
        host.run(["sh", "-c", f"rm -rf {host.mount}/home/storm {host.mount}/home/away {host.mount}/home/fresh-*"])
    lines = ["# The shared index across hosts (issue 38)", "",
             f"`python3 Benchmarks/multihost.py --images DIR --hosts {a.hosts}` (`--runs {a.runs} --trials "
             f"{a.trials} --storm {a.storm} --offline {a.offline}`), one run, {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores; each host a namespace with its own loop-mounted ext4 image and system "
             "index, all publishing into one PostgreSQL 15 on this machine. Times are the `mdq` command per "
             "invocation unless said.", ""]
    try:
        say("the initial publish")
        started = time.perf_counter()
        for host in hosts:
            host.start()
        wait_until_live(cluster, hosts)
        initial = time.perf_counter() - started
        entries = int(cluster.sql("SELECT sum(entries) + sum(folders) FROM mdq.host"))
        rows = int(cluster.sql("SELECT sum(entries) FROM mdq.host"))
        publish_times = []
        crawl_times = []
        for host in hosts:
            text = host.log_text()
            found = re.findall(r"published (\d+) entries and (\d+) folders .* in ([0-9.]+) s", text)
            if found:
                publish_times.append(float(found[-1][2]))
        say(f"all {len(hosts)} hosts live after {initial:.1f} s ({rows} entries)")
        cold_times = publish_times
        # The same indexes published again into an empty shared index: each
        # host's system index restarted from the index it saved (as a host
        # already running is given --publish), so the time is the publish
        # alone, without the crawl.
        say("the publish of indexes already built")
        for host in hosts:
            host.stop()
        cluster.sql("DROP DATABASE shared WITH (FORCE)", database="postgres")
        cluster.sql("CREATE DATABASE shared", database="postgres")
        subprocess.run([MDQ, "shared", "init", cluster.url], check=True, capture_output=True)
        started = time.perf_counter()
        for host in hosts:
            host.start()
        wait_until_live(cluster, hosts)
        warm = time.perf_counter() - started
        publish_times = []
        for host in hosts:
            found = re.findall(r"published (\d+) entries and (\d+) folders .* in ([0-9.]+) s", host.log_text())
            if found:
                publish_times.append(float(found[-1][2]))
        say(f"all {len(hosts)} hosts published again after {warm:.1f} s")
        size = int(cluster.sql(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'mdq' AND c.relkind = 'r'"))
        lines += ["## Initial publish and size", "",
                  "| figure | goal | measured |", "|---|---|---|",
                  f"| every host's crawl and publish, {rows:,} entries on {len(hosts)} hosts, started together "
                  f"| ≤ 60 s | {initial:.1f} s |",
                  f"| one host's publish (COPY aside, indexes, swap) in that, slowest / median of its log lines "
                  f"| | {max(cold_times):.1f} / {statistics.median(cold_times):.1f} s |",
                  f"| every host's publish of the index it holds (restarted from its saved index, into an empty "
                  f"shared index), started together | ≤ 60 s | {warm:.1f} s |",
                  f"| one host's publish in that, slowest / median | | {max(publish_times):.1f} / "
                  f"{statistics.median(publish_times):.1f} s |",
                  f"| shared index size, tables and indexes | ≤ 200 B per entry | {size / rows:.0f} B per entry "
                  f"({size / 2**30:.2f} GiB; {size / entries:.0f} B per row of entries and folders) |", ""]
        # Settle: the trigram indexes' pending lists, statistics.
        cluster.sql("VACUUM ANALYZE")
        # And until autovacuum, which the new partitions set off, is done:
        # the queries are measured on a quiet machine, not beside it.
        deadline = time.time() + 300
        while time.time() < deadline and int(cluster.sql(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'") or 0) > 0:
            time.sleep(1)

        say("queries across hosts")
        b = hosts[1]
        # Every host's index settled: its name trigrams built and its index
        # checked (a daemon that just crawled answers by scanning until
        # then), as a user's queries find it once it runs; and the other
        # hosts' checks are not left running beside the queries (on two
        # cores, nine of them doubled the first query's time).
        deadline = time.time() + 300
        for host in [b] + [h for h in hosts if h is not b]:
            while time.time() < deadline:
                status = host.run([MDQ, "system", "status"]).stdout
                if "still being built" not in status and "checking the index" not in status:
                    break
                time.sleep(1)
        env = dict(os.environ, MDQ_SHARED=cluster.url)

        def mdq_b(args):
            return ["env", f"MDQ_SHARED={cluster.url}"] + b.command([MDQ] + args, user="nobody")

        def mdq_b_system(args):
            # No credential of the user's own: host 1's system index answers.
            return ["env", "-u", "MDQ_SHARED"] + b.command([MDQ] + args, user="nobody")

        def sql_command(query):
            return ["psql", "-h", cluster.folder, "-U", "postgres", "-d", "shared", "-tAqc", query]

        body = ("FROM mdq.entry e JOIN mdq.folder f ON f.host_id = e.host_id AND f.folder_id = e.parent_id "
                "WHERE e.deleted_seq IS NULL AND f.deleted_seq IS NULL")
        # The word as mdq reads free text: a literal, `_` included.
        rare = a.rare.lower().replace("_", "\\_")
        queries = [
            ("rare word, count", ["--all-hosts", "--count", a.rare], ["-a", "--count", a.rare],
             f"SELECT count(*) {body} AND coalesce(e.fold, e.name) LIKE '%{rare}%'", "≤ 20 ms"),
            ("rare word, paths", ["--all-hosts", a.rare], ["-a", a.rare],
             f"SELECT f.path || '/' || e.name {body} AND coalesce(e.fold, e.name) LIKE '%{rare}%'", "≤ 20 ms"),
            ("`*.png` count", ["--all-hosts", "--count", "*.png"], ["-a", "--count", "*.png"],
             f"SELECT count(*) {body} AND e.ext = 'png'", "≤ 100 ms"),
            ("first 100 paths of `*.txt`", ["--all-hosts", "--limit", "100", "*.txt"],
             ["-a", "--limit", "100", "*.txt"],
             f"SELECT f.path || '/' || e.name {body} AND coalesce(e.fold, e.name) LIKE '%.txt' LIMIT 100", "≤ 10 ms"),
            # Each host's first 20 by date (schema 6), not every match.
            ("the 20 latest `*.txt` (`--sort` by date)",
             ["--all-hosts", "--sort", "kMDItemFSContentChangeDate:desc", "--limit", "20", "*.txt"],
             ["-a", "--sort", "kMDItemFSContentChangeDate:desc", "--limit", "20", "*.txt"],
             f"SELECT f.path || '/' || e.name {body} AND e.ext = 'txt' ORDER BY e.mtime DESC NULLS LAST LIMIT 20",
             "–"),
        ]
        lines += ["## Queries across all hosts, as `nobody` on host 1", "",
                  "Median of %d invocations each, after 3 untimed. `mdq --all-hosts` for a user of host 1 "
                  "(the trusted mode: no database credential of their own) is answered by host 1's system "
                  "index (`--search`: over connections it keeps, two for the other hosts): host 1 from its "
                  "index, the nine others from the shared index, filtered for the user. With the user's own "
                  "credential (`MDQ_SHARED`, the mode for machines that may not be trusted) the full command "
                  "searches itself, over a connection of its own each time. Raw SQL is `psql` unfiltered (one "
                  "process per query, like `mdq`); the local daemon is `mdq -a` on host 1 alone (a tenth of the "
                  "entries)." % a.runs, "",
                  "| query | goal | `mdq --all-hosts` | answer | own credential | raw SQL (`psql`) | answer "
                  "| local daemon, host 1 only | answer |", "|---|---|---|---|---|---|---|---|---|"]
        for label, shared_args, local_args, query, goal in queries:
            shared_time, shared_out = timed(mdq_b_system(shared_args), a.runs)
            own_time, own_out = timed(mdq_b(shared_args), a.runs)
            if own_out != shared_out:
                own_out = "differs: " + own_out
            sql_time, sql_out = timed(sql_command(query), a.runs)
            local_time, local_out = timed(b.command([MDQ] + local_args, user="nobody"), a.runs)

            def short(text):
                lines_ = text.splitlines()
                return (lines_[0] if len(lines_) == 1 else f"{len(lines_)} lines").replace("|", "/")[:40]
            lines.append(f"| {label} | {goal} | {shared_time * 1000:.1f} ms | {short(shared_out)} | "
                         f"{own_time * 1000:.1f} ms{'' if own_out == shared_out else ' (' + short(own_out) + ')'} | "
                         f"{sql_time * 1000:.1f} ms | {short(sql_out)} | {local_time * 1000:.1f} ms | "
                         f"{short(local_out)} |")
        lines.append("")

        say("sustained changes on host 0")
        a_host = hosts[0]
        host_id = cluster.sql(f"SELECT host_id FROM mdq.host WHERE name = '{a_host.name}'")
        storm_folder = f"{a_host.mount}/home/storm"
        creator = ("import os, sys\nd = sys.argv[1]\nos.makedirs(d, exist_ok=True)\n"
                   "for i in range(int(sys.argv[2])):\n"
                   "    if i % 1000 == 0: os.makedirs(f'{d}/{i // 1000}', exist_ok=True)\n"
                   "    os.close(os.open(f'{d}/{i // 1000}/storm-{i}.txt', os.O_CREAT | os.O_WRONLY))\n")

        def stormed():
            return int(cluster.sql(
                f"SELECT count(*) FROM mdq.entry_{host_id} WHERE coalesce(fold, name) LIKE 'storm-%' AND deleted_seq IS NULL"))
        # The publisher's database session is stopped (SIGSTOP) while the
        # files are made, so their changes wait in the index's journal;
        # then it goes on, and the rate is what it sends from then on.
        backend = int(cluster.sql(
            f"SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = {host_id} AND granted"))
        os.kill(backend, signal.SIGSTOP)
        started = time.perf_counter()
        a_host.run(["python3", "-c", creator, storm_folder, str(a.storm)], check=True)
        made = time.perf_counter() - started
        # The index holds them all before the publisher goes on.
        while int(a_host.run([MDQ, "-a", "--count", "--hidden", "storm-*"]).stdout.strip() or 0) < a.storm:
            time.sleep(0.2)
        os.kill(backend, signal.SIGCONT)
        started = time.perf_counter()
        while stormed() < a.storm:
            time.sleep(0.05)
        published = time.perf_counter() - started
        lines += ["## Sustained changes on one host", "",
                  f"{a.storm:,} files created in {a.storm // 1000:,} folders of host 0 ({made:.1f} s) while its "
                  f"publisher's database session was stopped (`SIGSTOP`), so their changes waited in its index's "
                  f"journal; from `SIGCONT`, all were in the shared index after {published:.1f} s: "
                  f"**{a.storm / published:,.0f} changes/s** published (goal ≥ 20,000/s).", ""]

        say("freshness, host 0 → host 1")
        delays = []
        for i in range(a.trials):
            name = f"fresh-{os.getpid()}-{i}.txt"
            started = time.perf_counter()
            a_host.run(["touch", f"{a_host.mount}/home/{name}"], check=True)
            while True:
                result = subprocess.run(mdq_b(["--host", a_host.name, "--count", name]), capture_output=True,
                                        text=True)
                if result.stdout.strip() == "1":
                    break
            delays.append(time.perf_counter() - started)
        # The same, seen by a live query on host 1: with the user's own
        # credential (the query reads the shared index itself), and
        # without one (host 1's system index follows host 0 for the user,
        # `subscribe-hosts`).
        import select
        watcher = None
        buffer = b""

        def next_line(deadline):
            nonlocal buffer
            while b"\n" not in buffer:
                ready, _, _ = select.select([watcher.stdout], [], [], max(0, deadline - time.time()))
                if not ready:
                    return None
                chunk = os.read(watcher.stdout.fileno(), 65536)
                if not chunk:
                    return None
                buffer += chunk
            line, buffer = buffer.split(b"\n", 1)
            return line.decode(errors="replace")

        def live_delays_of(command, prefix, environment=None):
            nonlocal watcher, buffer
            watcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment)
            buffer = b""
            time.sleep(1)
            found = []
            for i in range(a.trials):
                name = f"{prefix}-{os.getpid()}-{i}.txt"
                started = time.perf_counter()
                a_host.run(["touch", f"{a_host.mount}/home/{name}"], check=True)
                while True:
                    line = next_line(time.time() + 10)
                    if line is None or line.endswith(name):
                        break
                if line is not None:
                    found.append(time.perf_counter() - started)
            watcher.kill()
            return found

        live_delays = live_delays_of(mdq_b(["--live", "--interval", "0", "--host", a_host.name, "fresh-live"]),
                                     "fresh-live")
        uncredentialed = {k: v for k, v in os.environ.items() if k != "MDQ_SHARED"}
        followed_delays = live_delays_of(
            b.command([MDQ, "--live", "--interval", "0", "--host", a_host.name, "fresh-followed"], user="nobody"),
            "fresh-followed", uncredentialed)
        # A live query with a million results (every `.png` of every
        # host): each new file on host 0 is read as host 0's changes since
        # the query's cursor, not by searching host 0 again.
        watcher = subprocess.Popen(mdq_b(["--live", "--interval", "0", "--all-hosts", "--count", "*.png"]),
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        buffer = b""
        gathered = next_line(time.time() + 120)
        big_delays = []
        for i in range(a.trials if gathered else 0):
            name = f"fresh-big-{os.getpid()}-{i}.png"
            started = time.perf_counter()
            a_host.run(["touch", f"{a_host.mount}/home/{name}"], check=True)
            line = next_line(time.time() + 10)
            if line is None:
                break
            big_delays.append(time.perf_counter() - started)
        watcher.kill()
        again_time, again_out = timed(mdq_b(["--host", a_host.name, "--limit", "100000000", "*.png"]), 3)
        big_text = (f"p50 {percentile(big_delays, 50) * 1000:.0f} ms, p99 {percentile(big_delays, 99) * 1000:.0f} ms "
                    f"over {len(big_delays)} files, its results {gathered} at the start"
                    if big_delays else "no file seen")
        def delays_text(found):
            return (f"p50 {percentile(found, 50) * 1000:.0f} ms, p90 {percentile(found, 90) * 1000:.0f} "
                    f"ms, p99 {percentile(found, 99) * 1000:.0f} ms over {len(found)} files"
                    if found else "no file seen")
        live_text = delays_text(live_delays)
        followed_text = delays_text(followed_delays)
        lines += ["## Freshness across hosts", "",
                  f"A file created on host 0 (`touch` through `nsenter`), then `mdq --host host0 --count NAME` "
                  f"run as `nobody` on host 1 until it answers 1, {a.trials} times (the time includes each "
                  f"`mdq` process, about a query's cost apart): p50 {percentile(delays, 50) * 1000:.0f} ms, "
                  f"p90 {percentile(delays, 90) * 1000:.0f} ms, p99 {percentile(delays, 99) * 1000:.0f} ms "
                  "(goal p99 ≤ 500 ms).", "",
                  f"Seen by a live query (`mdq --live --interval 0 --host host0 fresh-live`, as `nobody` on host 1; "
                  f"each file's `+` line): {live_text} (goal p99 ≤ 500 ms). The same for a user with no database "
                  f"credential of their own (no `MDQ_SHARED`: host 1's system index follows host 0 for them, "
                  f"`subscribe-hosts`): {followed_text}.", "",
                  f"A live query of a million results (`mdq --live --interval 0 --all-hosts --count '*.png'`, as "
                  f"`nobody` on host 1; each new `.png` on host 0 until its new count line): {big_text}. It reads "
                  f"host 0's rows changed since its cursor (`mdq.changes`); searching host 0 again whole, as live "
                  f"queries did before schema version 3, costs {again_time * 1000:.0f} ms a batch "
                  f"(`mdq --host host0 '*.png'`, {len(again_out.splitlines()):,} paths).", ""]

        say("a host back after changes made while it was stopped")
        c_host = hosts[2] if len(hosts) > 2 else hosts[-1]
        c_id = cluster.sql(f"SELECT host_id FROM mdq.host WHERE name = '{c_host.name}'")
        half = a.offline // 2
        away = f"{c_host.mount}/home/away"
        maker = ("import os, sys\nd = sys.argv[1]\nos.makedirs(d, exist_ok=True)\n"
                 "for i in range(int(sys.argv[3])):\n"
                 "    os.close(os.open(f'{d}/{sys.argv[2]}-{i}.txt', os.O_CREAT | os.O_WRONLY))\n")
        remover = ("import os, sys\nfor i in range(int(sys.argv[3])):\n"
                   "    os.unlink(f'{sys.argv[1]}/{sys.argv[2]}-{i}.txt')\n")

        def published(prefix):
            return int(cluster.sql(f"SELECT count(*) FROM mdq.entry_{c_id} WHERE coalesce(fold, name) LIKE '{prefix}-%' "
                                   "AND deleted_seq IS NULL"))
        # Files that will be removed while it is away, published first.
        c_host.run(["python3", "-c", maker, away, "old", str(half)], check=True)
        while published("old") < half:
            time.sleep(0.2)
        time.sleep(1)
        c_host.stop()
        before = cluster.sql(f"SELECT last_seq || ' ' || generation FROM mdq.host WHERE host_id = {c_id}").split()
        c_host.run(["python3", "-c", remover, away, "old", str(half)], check=True)
        c_host.run(["python3", "-c", maker, away, "new", str(half)], check=True)
        started = time.perf_counter()
        c_host.start()
        while published("new") < half or published("old") > 0:
            time.sleep(0.2)
        caught = time.perf_counter() - started
        time.sleep(2)
        last = cluster.sql(f"SELECT last_seq FROM mdq.host WHERE host_id = {c_id}")
        sent = int(cluster.sql(
            f"SELECT (SELECT count(*) FROM mdq.entry_{c_id} WHERE seq > {before[0]}) + "
            f"(SELECT count(*) FROM mdq.folder_{c_id} WHERE seq > {before[0]})"))
        after = cluster.sql(f"SELECT generation FROM mdq.host WHERE host_id = {c_id}")
        lines += ["## A host back after changes made while it was away", "",
                  f"Host {hosts.index(c_host)}'s system index stopped (it saves its index; the host shows offline), "
                  f"{half:,} of its files removed and {half:,} made, the index started again: it checks its "
                  "snapshot against the disk and its publisher resumes from the database's clock. Caught up in "
                  f"{caught:.1f} s (its restart included); **{sent:,} rows written** (entries and folders whose "
                  f"sequence moved: batches {before[0]} to {last}), of "
                  f"{int(cluster.sql(f'SELECT entries FROM mdq.host WHERE host_id = {c_id}')):,}; generation "
                  f"{before[1]} → {after} ({'no reload' if before[1] == after else 'reloaded'}).", ""]
        # What this run made goes, so the next run starts from the same trees.
        for host in hosts:
            host.run(["sh", "-c", f"rm -rf {host.mount}/home/storm {host.mount}/home/away {host.mount}/home/fresh-*"])
    finally:
        if not a.keep:
            for host in hosts:
                host.close()
            cluster.stop()
            # The cluster's files are gigabytes: a run leaves none behind.
            shutil.rmtree(work, ignore_errors=True)
        # What was measured, even when a step failed.
        text = "\n".join(lines) + "\n"
        print(text)
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
