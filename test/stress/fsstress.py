#!/usr/bin/env python3
"""fsstress-style exerciser: random namespace operations from many processes in one small tree.

Our own code (in the spirit of the classic fsstress, none of its source). N forked workers, each with
its own PRNG seeded from --seed and its number (a failing seed replays the same choices; the
interleaving of the workers is up to the scheduler), pick among: create+write, append, overwrite,
truncate, mkdir, rmdir, rename of files and directories (onto existing names, across directories),
unlink, link, symlink, chmod, readdir, stat and read, on a few names in a tree a few levels deep so
that they collide all the time.

Errors that races between workers explain (ENOENT, EEXIST, ENOTEMPTY, ENOTDIR, EISDIR, ELOOP; EINVAL
for a directory renamed under itself; EPERM for a link(2) of a directory) are counted. Anything else
is a failure: it is reported with the op, its paths and the errno, and the exit code is 1.

Each worker notes the sha256 of what it wrote last into each file it closed (information for the
caller; several workers write the same names). One JSON line at the end: ops, counts per op,
expected errors per errno, unexpected ones (up to 50), seconds.

To reduce a failure: --trace T writes each worker's ops and results to T.<worker>; --replay T.0 runs
one trace again, op by op, in one process (--procs 1 makes a seed's op sequence exact).
"""

import argparse
import errno
import hashlib
import json
import os
import random
import signal
import sys
import time

EXPECTED = {errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR, errno.ELOOP}
# Per op, errnos that are right for what the op may meet: a directory renamed into itself, a link of
# a directory (link(2) on Linux), removing an entry from a directory a rename is emptying.
EXPECTED_FOR = {"rename": {errno.EINVAL}, "link": {errno.EPERM}}
# A known defect of Strata's mount, tolerated (counted apart) with --tolerate-stale-symlink-einval: a
# symlink's inode whose name another process replaced by a regular file answers readlink with EINVAL
# (ext4 returns the target), so an op whose path goes through a symlink the kernel still has cached
# fails with EINVAL. Reproduction: `ln -s x l; echo d > f`, then open l with O_PATH|O_NOFOLLOW, `rename f l`,
# readlinkat(fd, "") -> EINVAL.
FOLLOWING_OPS = {"create", "append", "overwrite", "truncate", "chmod", "read", "mkdir", "rmdir", "unlink", "link", "symlink", "readdir", "stat"}

DIRS = ["d0", "d1", "d2"]
FILES = ["f0", "f1", "f2", "f3", "f4", "f5"]


class Worker:
    def __init__(self, root, seed, number, maxsize, tolerate_einval=False, dir_renames=True):
        self.dir_renames = dir_renames
        self.tolerate_einval = tolerate_einval
        self.known = {}
        self.root = root
        self.rng = random.Random(seed * 1000 + number)
        self.number = number
        self.maxsize = maxsize
        self.counts = {}
        self.expected = {}
        self.unexpected = []
        self.last_written = {}

    def rel_dir(self):
        depth = self.rng.choice([0, 0, 1, 1, 2, 3])
        return "/".join(self.rng.choice(DIRS) for _ in range(depth))

    def rel(self, names):
        parent = self.rel_dir()
        name = self.rng.choice(names)
        return f"{parent}/{name}" if parent else name

    def abs(self, rel):
        return os.path.join(self.root, rel)

    def any_name(self):
        return self.rel(FILES + DIRS)

    def size(self):
        return self.rng.choice([0, 1, 100, 4096, 5000, 70000, self.rng.randrange(0, self.maxsize + 1)])

    # --- ops: each picks its arguments (plan_*), then runs through execute(), so a run can be traced
    # (--trace) and a trace replayed op by op (--replay) to reduce a failure.

    def plan_create(self):
        return [self.rel(FILES), self.size()]

    def plan_append(self):
        return [self.rel(FILES), self.size()]

    def plan_overwrite(self):
        return [self.rel(FILES), self.size(), self.rng.randrange(0, self.maxsize)]

    def plan_truncate(self):
        return [self.rel(FILES), self.rng.randrange(0, self.maxsize)]

    def plan_mkdir(self):
        return [self.rel(DIRS)]

    def plan_rmdir(self):
        return [self.rel(DIRS)]

    def plan_rename(self):
        names = DIRS if self.rng.random() < 0.3 and self.dir_renames else FILES
        return [self.rel(names), self.rel(names)]

    def plan_unlink(self):
        return [self.rel(FILES)]

    def plan_link(self):
        return [self.rel(FILES), self.rel(FILES)]

    def plan_symlink(self):
        # Relative targets without "..": whatever they resolve to stays inside the tree.
        return [self.rel(FILES + DIRS), self.rel(FILES + DIRS)]

    def plan_chmod(self):
        return [self.rel(FILES), self.rng.choice([0o644, 0o755, 0o600, 0o700])]

    def plan_readdir(self):
        return [self.rel_dir() if self.rng.random() < 0.8 else ""]

    def plan_stat(self):
        return [self.any_name()]

    def plan_read(self):
        return [self.rel(FILES)]

    def write_file(self, rel, flags, size, offset=None):
        data = self.rng.randbytes(size)
        fd = os.open(self.abs(rel), flags, 0o644)
        try:
            if offset is None:
                os.write(fd, data)
            else:
                os.pwrite(fd, data, offset)
        finally:
            os.close(fd)
        self.last_written[rel] = hashlib.sha256(data).hexdigest()

    def execute(self, name, args):
        path = self.abs(args[0])
        if name == "create":
            self.write_file(args[0], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, args[1])
        elif name == "append":
            self.write_file(args[0], os.O_WRONLY | os.O_APPEND, args[1])
        elif name == "overwrite":
            self.write_file(args[0], os.O_WRONLY, args[1], args[2])
        elif name == "truncate":
            os.truncate(path, args[1])
        elif name == "mkdir":
            os.mkdir(path)
        elif name == "rmdir":
            os.rmdir(path)
        elif name == "rename":
            os.rename(path, self.abs(args[1]))
        elif name == "unlink":
            os.unlink(path)
        elif name == "link":
            os.link(path, self.abs(args[1]), follow_symlinks=False)
        elif name == "symlink":
            os.symlink(args[0], self.abs(args[1]))
        elif name == "chmod":
            os.chmod(path, args[1])
        elif name == "readdir":
            os.listdir(path)
        elif name == "stat":
            os.lstat(path)
        elif name == "read":
            fd = os.open(path, os.O_RDONLY)
            try:
                while os.read(fd, 1 << 20):
                    pass
            finally:
                os.close(fd)

    WEIGHTS = {
        "create": 14,
        "append": 8,
        "overwrite": 6,
        "truncate": 4,
        "mkdir": 8,
        "rmdir": 4,
        "rename": 12,
        "unlink": 8,
        "link": 4,
        "symlink": 3,
        "chmod": 4,
        "readdir": 6,
        "stat": 8,
        "read": 6,
    }

    def run(self, ops, trace=None, replay=None):
        names = list(self.WEIGHTS)
        weights = [self.WEIGHTS[n] for n in names]
        steps = replay if replay is not None else (None for _ in range(ops))
        for number, step in enumerate(steps):
            if step is None:
                name = self.rng.choices(names, weights)[0]
                args = getattr(self, f"plan_{name}")()
            else:
                name, args = step["op"], step["args"]
            self.counts[name] = self.counts.get(name, 0) + 1
            result = "ok"
            try:
                self.execute(name, args)
            except OSError as failure:
                result = errno.errorcode.get(failure.errno, str(failure.errno))
                if failure.errno in EXPECTED or failure.errno in EXPECTED_FOR.get(name, ()):
                    self.expected[result] = self.expected.get(result, 0) + 1
                elif self.tolerate_einval and failure.errno == errno.EINVAL and name in FOLLOWING_OPS:
                    self.known[f"{name} {result}"] = self.known.get(f"{name} {result}", 0) + 1
                elif len(self.unexpected) < 50:
                    self.unexpected.append({"worker": self.number, "op": number, "name": name, "args": args, "errno": result, "error": str(failure)})
                else:
                    self.unexpected.append(None)
            if trace is not None:
                trace.write(json.dumps({"w": self.number, "n": number, "op": name, "args": args, "result": result}) + "\n")

    def summary(self):
        return {
            "counts": self.counts,
            "expected": self.expected,
            "unexpected": [u for u in self.unexpected if u is not None],
            "unexpectedCount": len(self.unexpected),
            "knownDefect": self.known,
            "lastWritten": self.last_written,
        }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--ops", type=int, default=1000, help="per process")
    parser.add_argument("--maxsize", type=int, default=100_000)
    parser.add_argument("--out", help="the full summary (with each worker's last writes) goes here")
    parser.add_argument("--trace", help="each worker writes its ops and their results to TRACE.<worker> (JSON lines)")
    parser.add_argument("--tolerate-stale-symlink-einval", action="store_true", help="count that known defect apart (see FOLLOWING_OPS)")
    parser.add_argument("--no-dir-renames", action="store_true", help="rename files only (directory renames race the mount's known defects)")
    parser.add_argument("--replay", help="one process runs the ops of this trace file, in order")
    parser.add_argument("--timeout", type=int, default=900, help="seconds; then SIGALRM ends the run (a caller that died cannot)")
    args = parser.parse_args()
    replay = None
    if args.replay:
        with open(args.replay) as steps:
            replay = [json.loads(line) for line in steps if line.strip()]
        args.procs = 1

    signal.alarm(args.timeout)
    started = time.monotonic()
    children = {}
    for number in range(args.procs):
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            signal.alarm(args.timeout)  # alarms are not inherited: each worker is bounded too
            os.close(read_end)
            code = 0
            try:
                worker = Worker(args.root, args.seed, number, args.maxsize, args.tolerate_stale_symlink_einval, not args.no_dir_renames)
                trace = open(f"{args.trace}.{number}", "w", buffering=1) if args.trace else None
                worker.run(args.ops, trace, replay)
                result = worker.summary()
            except BaseException as crash:  # a crash of the worker itself is a failure to report
                result = {"crash": f"{type(crash).__name__}: {crash}"}
                code = 1
            with os.fdopen(write_end, "w") as out:
                json.dump(result, out)
            os._exit(code)
        os.close(write_end)
        children[pid] = read_end

    workers = []
    crashed = []
    for pid, read_end in children.items():
        with os.fdopen(read_end) as result_in:
            text = result_in.read()
        _, status = os.waitpid(pid, 0)
        result = json.loads(text) if text else {"crash": f"no result, wait status {status}"}
        if "crash" in result:
            crashed.append(result["crash"])
        workers.append(result)

    counts, expected, unexpected, known = {}, {}, [], {}
    for result in workers:
        for key, value in result.get("knownDefect", {}).items():
            known[key] = known.get(key, 0) + value
        for key, value in result.get("counts", {}).items():
            counts[key] = counts.get(key, 0) + value
        for key, value in result.get("expected", {}).items():
            expected[key] = expected.get(key, 0) + value
        unexpected.extend(result.get("unexpected", []))
    summary = {
        "seed": args.seed,
        "procs": args.procs,
        "ops": sum(counts.values()),
        "counts": counts,
        "expectedErrors": expected,
        "unexpected": unexpected[:50],
        "unexpectedCount": sum(r.get("unexpectedCount", 0) for r in workers),
        "knownDefect": known,
        "crashed": crashed,
        "seconds": round(time.monotonic() - started, 3),
    }
    summary["ok"] = summary["unexpectedCount"] == 0 and not crashed
    if args.out:
        with open(args.out, "w") as out:
            json.dump({**summary, "lastWritten": [r.get("lastWritten", {}) for r in workers]}, out)
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
