"""The server's kernel bridge: runs Jupyter kernels and a persistent bash for sandbar's code contexts.

The sandbar server starts one bridge, lazily, and talks to it over this process's stdin and
stdout, one JSON object a line. Kernels are driven with jupyter_client (the library Jupyter's own
server uses): ZeroMQ, message signing, interrupts and restarts stay in the tested implementation,
and no port or token exists for anything else to reach.

Requests:  {"id": n, "op": "start"|"execute"|"interrupt"|"restart"|"stop", "kid": "...", ...}
Answers:   {"re": n, "ok": true, ...} or {"re": n, "ok": false, "error": "..."}
Execute also sends, before its answer: {"re": n, "event": "stdout"|"stderr", "text": ...},
{"re": n, "event": "result", "data": {...}, "main": bool}, {"re": n, "event": "error", ...}.

Nothing outlives the server: when stdin reaches end of file (the server exited, even by SIGKILL)
every kernel's process group is killed and the bridge exits; each kernel also has
PR_SET_PDEATHSIG, so it dies if the bridge itself is killed.

Private kernels: a Jupyter kernel listens on loopback TCP, on ports taken from the identity's own
block (SANDBAR_KERNEL_PORTS, "first-last"), which the confinement of every other identity can
neither connect to nor bind (server/confine/kernel_ports.ts).

Each kernel gets a temporary directory of its own (TMPDIR, TEMP, TMP) under the bridge's private
directory, unless the context's environment names one; it is removed with the kernel.
"""

import ctypes
import json
import os
import queue
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import KernelManager

_out_lock = threading.Lock()
_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1
INTERRUPT_GRACE = 5.0


def send(obj):
    line = json.dumps(obj, separators=(",", ":")) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def _die_with_parent():
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


_ports_lock = threading.Lock()
_ports_taken = set()
TMP_VARS = ("TMPDIR", "TEMP", "TMP")


def _take_ports(n):
    """n free loopback ports from this identity's block, held until _give_ports."""
    first, last = (int(p) for p in os.environ["SANDBAR_KERNEL_PORTS"].split("-"))
    got = []
    # A random starting place: another server on this host scans the same block, and two
    # scans from its first port would pick the same ports at the same moment.
    size = last - first + 1
    start = secrets.randbelow(size)
    with _ports_lock:
        for i in range(size):
            port = first + (start + i) % size
            if port in _ports_taken:
                continue
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            finally:
                probe.close()
            got.append(port)
            if len(got) == n:
                _ports_taken.update(got)
                return got
    raise RuntimeError(f"no {n} free ports left for a kernel in this identity's block {first}-{last}")


def _give_ports(ports):
    with _ports_lock:
        _ports_taken.difference_update(ports)


def _kernel_tmp(env, kid, wanted):
    """A temporary directory for one kernel, or None when the context's environment names one."""
    if not wanted:
        return None
    path = tempfile.mkdtemp(prefix=f"{kid}-", dir=_TMP_ROOT)
    for name in TMP_VARS:
        env[name] = path
    return path


_TMP_ROOT = os.path.join(os.getcwd(), "tmp")


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


# Deno's kernel grants every permission; the policy grants none, so each fresh kernel gives them
# all up before the first run. A revoked permission cannot be asked back: there is no terminal.
DENO_REVOKE = (
    "for (const name of ['read','write','net','env','run','ffi','sys','import']) "
    "{ try { Deno.permissions.revokeSync({ name }); } catch { /* not in this Deno */ } }"
)


class KernelDied(Exception):
    """The kernel process exited (exit(), Deno.exit(), a crash)."""


class JupyterKernel:
    """One Jupyter kernel (python: ipykernel; deno: deno jupyter --kernel)."""

    def __init__(self, kind, argv, cwd, env, interrupt_mode, tmp):
        self.kind = kind
        self.km = KernelManager()
        self.km._kernel_spec = KernelSpec(
            argv=argv, language=kind, display_name=kind, env={}, interrupt_mode=interrupt_mode
        )
        # Ports from this identity's block, kept across restarts (not jupyter_client's cache).
        self.km.cache_ports = False
        self.km.ip = "127.0.0.1"
        self._use_ports(_take_ports(5))
        self.cwd = cwd
        self.env = env
        self.tmp = tmp
        self.kc = None

    def _use_ports(self, ports):
        self.ports = ports
        (self.km.shell_port, self.km.iopub_port, self.km.stdin_port, self.km.control_port,
         self.km.hb_port) = ports

    def start(self):
        # A free port can be taken between the probe and the kernel's bind (by a process that is
        # not this server's): the kernel then dies, or the client meets a stranger's socket and
        # refuses its signature. Both are retried on other ports.
        for attempt in range(3):
            try:
                self._start_once()
                return
            except Exception:
                if attempt == 2:
                    raise
                if self.kc is not None:
                    self.kc.stop_channels()
                    self.kc = None
                try:
                    self.km.shutdown_kernel(now=True)
                except Exception:
                    pass
                taken = self.ports
                self._use_ports(_take_ports(5))
                _give_ports(taken)

    def _start_once(self):
        # The kernel's own stdout must never reach this process's stdout, the server's channel.
        self.km.start_kernel(
            cwd=self.cwd, env=self.env, preexec_fn=_die_with_parent, stdout=subprocess.DEVNULL
        )
        self._connect()

    def _connect(self):
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        if self.kind == "deno":
            self._silent(DENO_REVOKE)

    @property
    def pid(self):
        proc = getattr(self.km.provisioner, "process", None)
        return proc.pid if proc else None

    def _silent(self, code):
        msg_id = self.kc.execute(code, silent=True, store_history=False)
        self._drain(msg_id, None, time.monotonic() + 30)
        self._reply(msg_id)

    def _reply(self, msg_id):
        """The execute_reply of msg_id (replies to earlier requests are skipped)."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                reply = self.kc.get_shell_msg(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                return None
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"]
        return None

    def _drain(self, msg_id, emit, deadline, until=None):
        """Read iopub for msg_id until idle (of until, when given); False past the deadline."""
        until = until or msg_id
        while True:
            left = deadline - time.monotonic() if deadline else 1.0
            if deadline and left <= 0:
                return False
            try:
                msg = self.kc.get_iopub_msg(timeout=min(max(left, 0.01), 1.0))
            except queue.Empty:
                if not self.km.is_alive():
                    raise KernelDied()
                continue
            parent = msg["parent_header"].get("msg_id")
            kind, content = msg["msg_type"], msg["content"]
            if parent == until and kind == "status" and content.get("execution_state") == "idle":
                return True
            if parent != msg_id or emit is None:
                continue
            if kind == "stream":
                emit({"event": content.get("name", "stdout"), "text": content.get("text", "")})
            elif kind in ("execute_result", "display_data"):
                emit({"event": "result", "data": content.get("data", {}),
                      "main": kind == "execute_result"})
            elif kind == "error":
                emit({"event": "error", "name": content.get("ename", ""),
                      "value": content.get("evalue", ""),
                      "traceback": content.get("traceback", [])})

    def execute(self, code, timeout, env, emit):
        if env and self.kind == "python":
            self._silent(
                "import os as _sb_os, json as _sb_json\n"
                f"_sb_env = _sb_json.loads({json.dumps(json.dumps(env))})\n"
                "_sb_saved = {k: _sb_os.environ.get(k) for k in _sb_env}\n"
                "_sb_os.environ.update(_sb_env)\n"
            )
        msg_id = self.kc.execute(code, store_history=True, allow_stdin=False)
        deadline = time.monotonic() + timeout if timeout > 0 else None
        timed_out = restarted = False
        try:
            if not self._drain(msg_id, emit, deadline):
                timed_out = True
                self.km.interrupt_kernel()
                if not self._drain(msg_id, emit, time.monotonic() + INTERRUPT_GRACE):
                    self.restart()
                    restarted = True
        except KernelDied:
            emit({"event": "error", "name": "KernelDied",
                  "value": "the kernel exited during the run; it was restarted", "traceback": []})
            self.restart()
            restarted = True
        reply = None if restarted else self._reply(msg_id)
        count = reply.get("execution_count") if reply else None
        if self.kind == "deno" and not restarted:
            # Deno's kernel can publish a run's console output after its idle status: a no-op
            # run behind it lets that output arrive before the result is final.
            flush = self.kc.execute("", silent=True, store_history=False)
            self._drain(msg_id, emit, time.monotonic() + INTERRUPT_GRACE, until=flush)
            self._reply(flush)
        if env and self.kind == "python" and not restarted:
            self._silent(
                "for _sb_k, _sb_v in _sb_saved.items():\n"
                "    _sb_os.environ.pop(_sb_k, None) if _sb_v is None "
                "else _sb_os.environ.__setitem__(_sb_k, _sb_v)\n"
                "del _sb_k, _sb_v, _sb_saved, _sb_env, _sb_os, _sb_json\n"
            )
        return {"timed_out": timed_out, "restarted": restarted, "execution_count": count,
                "pid": self.pid}

    def interrupt(self):
        self.km.interrupt_kernel()

    def restart(self):
        if self.kc:
            self.kc.stop_channels()
        pid = self.pid
        self.km.restart_kernel(now=True)
        if pid:
            _kill_group(pid)
        self._connect()

    def stop(self):
        pid = self.pid
        if self.kc:
            self.kc.stop_channels()
        try:
            self.km.shutdown_kernel(now=True)
        finally:
            if pid:
                _kill_group(pid)
            self.km.cleanup_resources()
            _give_ports(self.ports)
            if self.tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)


class BashShell:
    """A persistent bash: variables, functions and the working directory last between runs."""

    def __init__(self, cwd, env, scratch, tmp):
        self.cwd = cwd
        self.env = env
        self.scratch = scratch
        self.tmp = tmp
        self.proc = None
        self.count = 0

    def start(self):
        self.proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=self.cwd, env=self.env, start_new_session=True, preexec_fn=_die_with_parent,
        )
        # An interrupt ends the sourced run, not the shell.
        self._write("trap 'return 130 2>/dev/null' INT\n")

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def _write(self, text):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def _pump(self, stream, name, marker, emit, done):
        pending = b""
        while True:
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                done[name] = None
                return
            pending += chunk
            at = pending.find(marker)
            if at >= 0:
                before, after = pending[:at], pending[at + len(marker):]
                if before:
                    emit({"event": name, "text": before.decode(errors="replace")})
                done[name] = after.split(b"\n", 1)[0].decode()
                return
            keep = len(marker) - 1
            # Hold back what might be the start of the marker, and a cut UTF-8 character.
            cut = max(len(pending) - keep, 0)
            while 0 < cut < len(pending) and (pending[cut] & 0xC0) == 0x80:
                cut -= 1
            if cut:
                emit({"event": name, "text": pending[:cut].decode(errors="replace")})
                pending = pending[cut:]

    def execute(self, code, timeout, env, emit):
        self.count += 1
        token = secrets.token_hex(8)
        marker = f"\x00sandbar-end-{token} ".encode()
        fd, path = tempfile.mkstemp(suffix=".sh", dir=self.scratch)
        with os.fdopen(fd, "w") as f:
            f.write(code + "\n")
        exports = "".join(f"export {k}={_sh_quote(v)}\n" for k, v in (env or {}).items())
        self._write(
            # Code that reads stdin must not eat the shell's next instructions.
            f"{exports}source {_sh_quote(path)} < /dev/null; __sb_rc=$?; "
            f"printf '\\0sandbar-end-{token} %s\\n' $__sb_rc; "
            f"printf '\\0sandbar-end-{token} \\n' >&2\n"
        )
        done = {}
        threads = [
            threading.Thread(target=self._pump, args=(self.proc.stdout, "stdout", marker, emit, done)),
            threading.Thread(target=self._pump, args=(self.proc.stderr, "stderr", marker, emit, done)),
        ]
        for t in threads:
            t.start()
        timed_out = restarted = False
        threads[0].join(timeout if timeout > 0 else None)
        if threads[0].is_alive():
            timed_out = True
            self.interrupt()
            threads[0].join(INTERRUPT_GRACE)
            if threads[0].is_alive():
                self.restart()
                restarted = True
        for t in threads:
            t.join(INTERRUPT_GRACE)
        os.unlink(path)
        rc = done.get("stdout")
        if rc is None and not restarted:
            self.restart()
            emit({"event": "error", "name": "KernelDied",
                  "value": "the shell exited during the run; it was restarted", "traceback": []})
            restarted = True
        if rc and rc != "0" and not timed_out:
            emit({"event": "error", "name": "ExitCode", "value": rc, "traceback": []})
        return {"timed_out": timed_out, "restarted": restarted, "execution_count": self.count,
                "pid": self.pid}

    def interrupt(self):
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except OSError:
            pass

    def restart(self):
        self.stop()
        self.start()

    def stop(self):
        if self.proc:
            _kill_group(self.proc.pid)
            self.proc.wait()
            for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                s.close()

    def remove(self):
        self.stop()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


def _sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


class Worker:
    """A kernel and the thread that runs its requests in order."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.jobs = queue.Queue()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            req = self.jobs.get()
            rid = req["id"]
            try:
                send({"re": rid, "ok": True, **run_job(self.kernel, req)})
            except Exception as e:  # noqa: BLE001 - every failure goes back to the server
                send({"re": rid, "ok": False, "error": str(e) or type(e).__name__})
            if req["op"] == "stop":
                return


def run_job(kernel, req):
    op = req["op"]
    if op == "start":
        try:
            kernel.start()
        except Exception:
            # A kernel that did not start gives back its ports and its temporary directory.
            try:
                kernel.remove() if isinstance(kernel, BashShell) else kernel.stop()
            except Exception:  # noqa: BLE001 - the start's own failure is the one to report
                pass
            raise
        return {"pid": kernel.pid}
    if op == "execute":
        def emit(event):
            send({"re": req["id"], **event})
        return kernel.execute(req["code"], req.get("timeout", 0), req.get("env"), emit)
    if op == "restart":
        kernel.restart()
        return {"pid": kernel.pid}
    if op == "stop":
        if isinstance(kernel, BashShell):
            kernel.remove()
        else:
            kernel.stop()
        return {}
    raise ValueError("unknown op " + op)


def main():
    # A run hands off between this thread, its worker and jupyter_client's heartbeat thread: the
    # default 5 ms switch interval would show up in every run's latency.
    sys.setswitchinterval(0.0005)
    workers = {}
    os.makedirs(_TMP_ROOT, mode=0o700, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="sandbar-bash-", dir=_TMP_ROOT)
    try:
        for line in sys.stdin:
            req = json.loads(line)
            kid = req.get("kid")
            if req["op"] == "start":
                kind = req["kind"]
                tmp = None
                try:
                    env = dict(req["env"])
                    tmp = _kernel_tmp(env, kid, req.get("tmp"))
                    if kind == "bash":
                        kernel = BashShell(req["cwd"], env, scratch, tmp)
                    else:
                        kernel = JupyterKernel(
                            kind, req["argv"], req["cwd"], env, req.get("interrupt", "signal"), tmp
                        )
                except Exception as e:  # noqa: BLE001 - the server gets every failure
                    if tmp:
                        shutil.rmtree(tmp, ignore_errors=True)
                    send({"re": req["id"], "ok": False, "error": str(e) or type(e).__name__})
                    continue
                workers[kid] = Worker(kernel)
            worker = workers.get(kid)
            if worker is None:
                send({"re": req["id"], "ok": False, "error": "no kernel " + str(kid)})
                continue
            if req["op"] == "interrupt":
                # Out of turn: the worker is busy with the run to interrupt.
                worker.kernel.interrupt()
                send({"re": req["id"], "ok": True})
                continue
            if req["op"] == "stop":
                del workers[kid]
            worker.jobs.put(req)
    finally:
        for w in workers.values():
            if w.kernel.pid:
                _kill_group(w.kernel.pid)
        shutil.rmtree(_TMP_ROOT, ignore_errors=True)
        os._exit(0)


if __name__ == "__main__":
    main()
