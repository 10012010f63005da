"""Where a group of processes spends its wall time (bench/pack_jobs.py,
issue 11): on a CPU, waiting for one, or asleep, and where asleep."""
import os
import threading
import time


class StateSampler:
    """Where the pack's processes spend the wall time, read from the
    kernel's scheduler statistics: every 25 ms (one thread of this script; reading
    /proc costs it a few per cent of one core), each process below the
    started ones (the workers and the packs themselves), each thread's
    /proc/PID/task/TID/schedstat (ns on a CPU, ns runnable but waiting for
    one). A process's time alive less both is time asleep (a pipe, a lock,
    the disk). The last sample before a process ends stands for its end,
    so up to 25 ms of each process is missed. Counted: the workers of a
    pack with several jobs, else the started processes. Linux only; silent
    elsewhere."""

    def __init__(self, roots, start):
        self.roots, self.start = roots, start
        self.seen = {}  # pid -> [first seen, last seen, on CPU ns, waiting ns]
        self.sleeps = {}  # "state wchan" -> samples of a worker's thread asleep there
        self.samples = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    @staticmethod
    def children(pid):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []
        kids = []
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids += [int(k) for k in f.read().split()]
            except OSError:
                pass
        return kids

    def sched(self, pid, worker):
        """(ns on a CPU, ns waiting for one) of all of `pid`'s threads; a
        worker's sleeping threads add to `sleeps` the kernel function they
        sleep in (wchan: a pipe read, a file lock, a futex, ...)."""
        run = wait = 0
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return None
        for tid in tids:
            task = f"/proc/{pid}/task/{tid}"
            try:
                with open(f"{task}/schedstat") as f:
                    fields = f.read().split()
                run, wait = run + int(fields[0]), wait + int(fields[1])
                if worker:
                    with open(f"{task}/stat") as f:
                        state = f.read().rsplit(")", 1)[1].split()[0]
                    if state in "SD":
                        with open(f"{task}/wchan") as f:
                            where = f.read().strip() or "?"
                        self.sleeps[f"{state} {where}"] = self.sleeps.get(f"{state} {where}", 0) + 1
            except (OSError, ValueError, IndexError):
                pass
        return run, wait

    def loop(self):
        while not self.done.is_set():
            now = time.perf_counter()
            todo = list(self.roots)
            while todo:
                pid = todo.pop()
                stats = self.sched(pid, pid not in self.roots)
                if stats is None:
                    continue
                entry = self.seen.setdefault(pid, [now, now, 0, 0])
                entry[1], entry[2], entry[3] = now, stats[0], stats[1]
                todo += self.children(pid)
            self.samples += 1
            self.done.wait(0.025)

    def stop(self):
        self.done.set()
        self.thread.join()

    def summary(self, wall):
        """Cores' worth over the wall: on a CPU, waiting for one, asleep;
        and the processes seen."""
        # A pack of several jobs mostly waits for its workers: the workers
        # alone are counted then.
        workers = [e for pid, e in self.seen.items() if pid not in self.roots]
        if not workers:
            workers = list(self.seen.values())
        if not workers or wall <= 0:
            return None
        alive = sum(last - first for first, last, _, _ in workers)
        run = sum(r for _, _, r, _ in workers) / 1e9
        wait = sum(w for _, _, _, w in workers) / 1e9
        # Where workers slept, in threads' worth over the samples.
        sleeps = sorted(self.sleeps.items(), key=lambda kv: -kv[1])[:4]
        return {"on_cpu": run / wall, "waiting": wait / wall,
                "asleep": max(0.0, alive - run - wait) / wall, "processes": len(workers),
                "asleep_in": {k: round(v / max(1, self.samples), 2) for k, v in sleeps}}
