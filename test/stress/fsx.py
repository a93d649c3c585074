#!/usr/bin/env python3
"""fsx-style exerciser: random IO on ONE file, every read checked against an in-memory model.

Our own code (in the spirit of the classic fsx, none of its source). Ops, chosen by a seeded PRNG so a
failing seed replays: pwrite (at times past EOF, leaving a hole), pread, ftruncate up or down, mmap
read, mmap write + msync, fsync, close + reopen, and a whole-file read through a fresh open. The first
miscompare stops the run: op number, the last ops, the first differing offset, expected vs got; exit 1.

Restores under a writer (Strata's mount): a process holding a file open for writing keeps its view
through a restore, and what it writes is versioned after it; closed WITHOUT writing since the restore,
the restore shows. So a second descriptor opened for writing stays open (the main one is closed and
reopened at random). Both are closed now and then ("closeall": the mount versions the file, and the
restores that follow meet a clean file under a writer) with --lock-file held (flock) from a write just
before the close until both are open again: the caller takes that lock around each restore, so a
restore is always followed by a write of fsx's before the file is closed. With --done-file/--go-file
the run ends in a handshake: say the ops are done, wait until the caller has stopped restoring, then
rewrite the model whole (a write after the last restore) and check it once more before closing.
--state-out gets the final model's bytes.

Prints one JSON line: ops done, counts per op, seconds (and the failure, if any).
"""

import argparse
import fcntl
import hashlib
import json
import mmap
import os
import random
import signal
import sys
import time

PAGE = mmap.PAGESIZE


class Miscompare(Exception):
    pass


class Fsx:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.path = args.file
        self.model = bytearray()
        self.log = []
        self.counts = {}
        self.op_number = 0
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC
        self.fd = os.open(self.path, flags, 0o644)
        # Held for the whole run: the file always has a writer (see the module's docstring).
        self.keeper = os.open(self.path, os.O_RDWR)
        self.lock = os.open(args.lock_file, os.O_RDWR | os.O_CREAT, 0o644) if args.lock_file else None

    # --- checks ---------------------------------------------------------------------------------

    def compare(self, what, offset, expected, got):
        if expected == got:
            return
        first = next((i for i in range(min(len(expected), len(got))) if expected[i] != got[i]), min(len(expected), len(got)))
        window = slice(first, first + 16)
        raise Miscompare(
            f"{what}: {len(got)} bytes at {offset} (expected {len(expected)}), first difference at file offset {offset + first}: "
            f"expected {bytes(expected[window]).hex() or '<end>'} got {bytes(got[window]).hex() or '<end>'}"
        )

    def check_size(self, what):
        size = os.fstat(self.fd).st_size
        if size != len(self.model):
            raise Miscompare(f"{what}: fstat size {size}, model size {len(self.model)}")

    # --- ops ------------------------------------------------------------------------------------

    def random_range(self, limit):
        offset = self.rng.randrange(0, max(1, limit))
        length = self.rng.randrange(1, self.args.maxop + 1)
        return offset, length

    def op_write(self):
        # Up to maxlen: often past the current end, so the gap reads back as zeros.
        offset, length = self.random_range(self.args.maxlen)
        length = min(length, self.args.maxlen - offset) or 1
        data = self.rng.randbytes(length)
        self.note(f"write {offset} {length}")
        written = os.pwrite(self.fd, data, offset)
        if written != length:
            raise Miscompare(f"write: pwrite wrote {written} of {length} bytes at {offset}")
        if offset > len(self.model):
            self.model.extend(bytes(offset - len(self.model)))
        self.model[offset : offset + length] = data

    def op_read(self):
        offset, length = self.random_range(len(self.model) + 1)
        self.note(f"read {offset} {length}")
        got = os.pread(self.fd, length, offset)
        self.compare("read", offset, bytes(self.model[offset : offset + length]), got)

    def op_truncate(self):
        size = self.rng.randrange(0, self.args.maxlen + 1)
        self.note(f"truncate {len(self.model)} -> {size}")
        os.ftruncate(self.fd, size)
        if size < len(self.model):
            del self.model[size:]
        else:
            self.model.extend(bytes(size - len(self.model)))
        self.check_size("truncate")

    def mapped_range(self):
        if not self.model:
            return None
        offset, length = self.random_range(len(self.model))
        return offset, min(length, len(self.model) - offset)

    def op_mapread(self):
        picked = self.mapped_range()
        if picked is None:
            return self.op_read()
        offset, length = picked
        self.note(f"mapread {offset} {length}")
        # Only whole pages inside the file: a mapping past EOF faults (SIGBUS).
        start = offset - offset % PAGE
        with mmap.mmap(self.fd, len(self.model) - start, access=mmap.ACCESS_READ, offset=start) as mapped:
            got = mapped[offset - start : offset - start + length]
        self.compare("mapread", offset, bytes(self.model[offset : offset + length]), got)

    def op_mapwrite(self):
        picked = self.mapped_range()
        if picked is None:
            return self.op_write()
        offset, length = picked
        data = self.rng.randbytes(length)
        self.note(f"mapwrite {offset} {length}")
        start = offset - offset % PAGE
        with mmap.mmap(self.fd, len(self.model) - start, access=mmap.ACCESS_WRITE, offset=start) as mapped:
            mapped[offset - start : offset - start + length] = data
            mapped.flush()  # msync(MS_SYNC): the pages reach the filesystem before the mapping goes
        self.model[offset : offset + length] = data

    def op_fsync(self):
        self.note("fsync")
        os.fsync(self.fd)

    def op_reopen(self):
        self.note("close+reopen")
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_RDWR)
        self.check_size("reopen")

    def rewrite_some(self):
        """A write of bytes the file already holds: after a restore, it makes fsx's view the file's."""
        if self.model:
            offset = self.rng.randrange(0, len(self.model))
            os.pwrite(self.fd, bytes(self.model[offset : offset + 64]), offset)
        else:
            os.pwrite(self.fd, b"x", 0)
            os.ftruncate(self.fd, 0)

    def op_closeall(self):
        self.note("closeall+reopen")
        if self.lock is not None:
            fcntl.flock(self.lock, fcntl.LOCK_EX)
        try:
            self.rewrite_some()
            os.close(self.fd)
            os.close(self.keeper)
            self.fd = os.open(self.path, os.O_RDWR)
            self.keeper = os.open(self.path, os.O_RDWR)
        finally:
            if self.lock is not None:
                fcntl.flock(self.lock, fcntl.LOCK_UN)
        self.check_size("closeall")
        self.op_fullcheck()

    def op_fullcheck(self):
        self.note("fullread")
        with open(self.path, "rb") as fresh:
            got = fresh.read()
        self.compare("fullread (fresh open)", 0, bytes(self.model), got)

    WEIGHTS = {
        "write": 30,
        "read": 25,
        "truncate": 6,
        "mapread": 10,
        "mapwrite": 10,
        "fsync": 6,
        "reopen": 4,
        "closeall": 2,
        "fullcheck": 4,
    }

    def note(self, text):
        self.log.append(f"{self.op_number}: {text} (size {len(self.model)})")
        if len(self.log) > 20:
            del self.log[0]

    def run(self):
        names = list(self.WEIGHTS)
        weights = [self.WEIGHTS[n] for n in names]
        for self.op_number in range(1, self.args.ops + 1):
            name = self.rng.choices(names, weights)[0]
            self.counts[name] = self.counts.get(name, 0) + 1
            getattr(self, f"op_{name}")()
            if self.op_number % 64 == 0:
                self.check_size(name)
        self.finish()

    def finish(self):
        self.op_number += 1
        if self.args.done_file:
            with open(self.args.done_file, "w"):
                pass
            deadline = time.monotonic() + self.args.go_timeout
            while not os.path.exists(self.args.go_file):
                if time.monotonic() > deadline:
                    raise Miscompare(f"no {self.args.go_file} within {self.args.go_timeout} s")
                time.sleep(0.02)
        # A write after the last restore: this descriptor's view is what the file is, once closed.
        self.note("final rewrite")
        if self.model:
            os.pwrite(self.fd, bytes(self.model), 0)
        else:
            self.rewrite_some()
        os.fsync(self.fd)
        self.op_fullcheck()
        os.close(self.fd)
        os.close(self.keeper)
        self.op_fullcheck()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ops", type=int, default=10000)
    parser.add_argument("--maxlen", type=int, default=256 * 1024, help="the file never grows past this")
    parser.add_argument("--maxop", type=int, default=32 * 1024, help="largest single read or write")
    parser.add_argument("--state-out", help="the final model's bytes go here")
    parser.add_argument("--lock-file", help="flock()ed from the write before a closeall until the reopen")
    parser.add_argument("--done-file", help="created when the ops are done")
    parser.add_argument("--go-file", help="waited for after --done-file, before the final rewrite")
    parser.add_argument("--go-timeout", type=float, default=60)
    parser.add_argument("--timeout", type=int, default=900, help="seconds; then SIGALRM ends the run (a caller that died cannot)")
    args = parser.parse_args()

    signal.alarm(args.timeout)
    started = time.monotonic()
    fsx = Fsx(args)
    summary = {"seed": args.seed, "ok": True}
    try:
        fsx.run()
    except (Miscompare, OSError) as failure:
        summary.update(ok=False, failedOp=fsx.op_number, failure=f"{type(failure).__name__}: {failure}", lastOps=fsx.log)
        print(f"fsx seed {args.seed}: FAILED at op {fsx.op_number}: {failure}", file=sys.stderr)
        print("last ops:\n  " + "\n  ".join(fsx.log), file=sys.stderr)
    summary.update(
        ops=min(fsx.op_number, args.ops),
        counts=fsx.counts,
        size=len(fsx.model),
        sha256=hashlib.sha256(fsx.model).hexdigest(),
        seconds=round(time.monotonic() - started, 3),
    )
    if args.state_out:
        with open(args.state_out, "wb") as out:
            out.write(fsx.model)
    print(json.dumps(summary))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
