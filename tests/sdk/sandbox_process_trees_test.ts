/**
 * Process trees inside a local sandbox: the supervisor hands the server the sandbox's v1 freezer
 * cgroup, or on cgroup v2 its `work` cgroup, by descriptor (`sdk/providers/local/tree_delegation.ts`),
 * so the server ends trees by cgroup there too (`server/process/trees.ts`). A `setsid` process whose parent already exited
 * (the session fallback cannot find it), a double fork, `disown` and a job in a group of its own
 * end with the command that started them, a background command killed, a code context removed,
 * and the sandbox stopped. Judged from the host: no process of this machine runs a `sleep` of the
 * duration only that escape used. Where the host gives the sandbox no cgroup (not root), the
 * server keeps to sessions and says so: only what that way finds is asserted;
 * a sandbox made with `limits: false` (no cgroup at all) shows that case on any host.
 */

import assert from "node:assert/strict";
import { LocalProvider, Sandbox } from "../../sdk/mod.ts";
import { cgroupSupport } from "../../sdk/providers/local/cgroup.ts";
import { dropSandbarHome, processesMentioning, useSandbarHome } from "./sandbox_helpers.ts";
import { eventually } from "../helpers/wait.ts";

const home = await useSandbarHome();
Deno.test.afterAll(() => dropSandbarHome(home));

const hasBwrap = new Deno.Command("sh", {
  args: ["-c", "command -v bwrap"],
  stdout: "null",
  stderr: "null",
}).outputSync().success;

/** Whether sandboxes here get a cgroup, of which the server is handed a directory. */
const support = cgroupSupport();
const delegated = support.ok;
const v2 = support.ok && support.version === 2;
/** A process's tree in `/proc/self/cgroup`, as the sandbox's cgroup namespace shows it. */
const TREE_LINE = v2
  ? /^0::\/sandbar-\d+\/t\d+-[0-9a-f]+$/m
  : /^\d+:[^:]*\bfreezer\b[^:]*:\/sandbar-\d+\/t\d+-[0-9a-f]+$/m;

/** The escapes: each writes its pid to `/tmp/<name>.pid` and sleeps for a duration its own. */
class Escapes {
  readonly markers: Record<string, string> = {};
  constructor() {
    const base = 6000 + Math.floor(Math.random() * 3000);
    ["setsid", "orphan", "double", "disown", "pgrp"].forEach((n, i) => {
      this.markers[n] = `${base}.${i + 1}${i + 1}9`;
    });
  }

  sleeper(name: string): string {
    return `sh -c 'echo $$ > /tmp/${name}.pid; exec sleep ${
      this.markers[name]
    }' >/dev/null 2>&1 </dev/null`;
  }

  /** The shell text that starts the escapes `names`. */
  start(names: string[]): string {
    const forms: Record<string, string> = {
      setsid: `setsid ${this.sleeper("setsid")} &`,
      // A new session whose parent exits at once: nothing but a cgroup still knows whose it is.
      orphan: `( setsid ${this.sleeper("orphan")} & ) ;`,
      double: `( ${this.sleeper("double")} & ) ;`,
      disown: `${this.sleeper("disown")} & disown;`,
      pgrp: `set -m; ${this.sleeper("pgrp")} & set +m;`,
    };
    return `rm -f ${names.map((n) => `/tmp/${n}.pid`).join(" ")}; ${
      names.map((n) => forms[n]).join(" ")
    }`;
  }

  /** Shell text that waits until each of `names` has written its pid. */
  waitFor(names: string[]): string {
    return names.map((n) => `while [ ! -s /tmp/${n}.pid ]; do sleep 0.01; done;`).join(" ");
  }

  /** Which of `names` run on this machine, seen from the host. */
  running(names: string[]): string[] {
    return names.filter((n) => processesMentioning(this.markers[n]).length > 0);
  }

  /** Every one of `names` ended (seen from the host); none is left running whatever happened. */
  async allGone(what: string, names: string[]): Promise<void> {
    try {
      await eventually(`every escape ended with ${what}`, () => this.running(names).length === 0);
    } finally {
      for (const n of names) {
        for (const pid of processesMentioning(this.markers[n])) Deno.kill(pid, "SIGKILL");
      }
    }
  }
}

/** The forms the server finds: all of them with a cgroup, else not a `setsid` whose parent died. */
function found(all: string[], commandEnded: boolean): string[] {
  if (delegated) return all;
  return all.filter((n) => n !== "orphan" && !(commandEnded && n === "setsid"));
}

const ALL = ["setsid", "orphan", "double", "disown", "pgrp"];

Deno.test({
  name: "local sandbox: what left its group ends with its command, process, context and sandbox",
  ignore: !hasBwrap,
  async fn(t) {
    await using sandbox = await Sandbox.create();
    await t.step("trees are cgroups, and the capabilities say no fallback", async () => {
      const r = await sandbox.commands.run("cat /proc/self/cgroup");
      const warnings = (await sandbox.server.discover()).warnings
        .filter((w) => w.startsWith("Process trees"));
      if (delegated) {
        assert.match(r.stdout, TREE_LINE, r.stdout);
        assert.deepEqual(warnings, []);
      } else {
        assert.equal(warnings.length, 1, "the session fallback is said");
      }
    });
    await t.step("a command ends", async () => {
      const e = new Escapes();
      const names = found(ALL, true);
      const r = await sandbox.commands.run(`${e.start(names)} ${e.waitFor(names)} echo started`);
      assert.equal(r.stdout, "started\n", r.stderr);
      await e.allGone("the command", names);
    });
    await t.step("a background command is killed", async () => {
      const e = new Escapes();
      const names = found(ALL, false);
      const handle = await sandbox.commands.start(
        `${e.start(names)} ${e.waitFor(names)} echo started; sleep 300`,
      );
      await sandbox.commands.run(e.waitFor(names));
      assert.deepEqual(e.running(names), names, "each runs before the kill");
      await sandbox.commands.kill(handle.pid);
      await e.allGone("the background command", names);
    });
    await t.step("a code context is removed", async () => {
      const e = new Escapes();
      const names = found(ALL, false);
      const ctx = await sandbox.code.createContext({ language: "bash" });
      await sandbox.code.run(`${e.start(names)} ${e.waitFor(names)}`, { contextId: ctx.id });
      assert.deepEqual(e.running(names), names, "each runs before the removal");
      await sandbox.code.removeContext(ctx.id);
      await e.allGone("the context", names);
    });
    await t.step("the sandbox stops", async () => {
      const e = new Escapes();
      await sandbox.commands.start(`${e.start(ALL)} ${e.waitFor(ALL)} sleep 300`);
      await sandbox.commands.run(e.waitFor(ALL));
      assert.deepEqual(e.running(ALL), ALL, "each runs before the stop");
      await sandbox.kill();
      await e.allGone("the sandbox", ALL);
    });
  },
});

Deno.test({
  name: "local sandbox: a confined process can neither use the delegated cgroup nor leave its tree",
  ignore: !hasBwrap || !delegated, // needs cgroups for sandboxes (root)
  async fn() {
    // A lifetime for a slow machine (an emulated VM): the tries below are some 2000 processes.
    await using sandbox = await Sandbox.create({ timeout: 1800 });
    // A code context: its kernel and the bridge that started it are the server's children too,
    // started another way (Deno.Command); none may hold the descriptor.
    // (A python kernel's first start takes over a request's default 30 s on an emulated VM.)
    const ctx = await sandbox.server.devtools.createContext({
      language: "python",
      requestTimeout: 600,
    });
    const kernel = await sandbox.code.run(
      "import os\n" +
        "print([n for n in range(300) if os.path.exists(f'/proc/self/fd/{n}/cgroup.procs')])",
      { contextId: ctx.id },
    );
    assert.equal(kernel.stdout, "[]\n", JSON.stringify(kernel.error));
    // Every way in a process of the sandbox could try: the server's descriptors through /proc
    // (each number; their numbers can be listed, nothing more: the server is not dumpable), the
    // descriptors of every other process it can see, the read-only cgroup mount; each by a
    // move (v1 `tasks`, `cgroup.procs`, and the descriptor itself, which on v2 may be a
    // host-opened `cgroup.procs`), a new cgroup and a freeze. Each prints a line only when it
    // worked.
    const own = v2 ? "grep '^0::' /proc/self/cgroup" : "grep freezer /proc/self/cgroup";
    const mounted = v2
      ? "/sys/fs/cgroup /sys/fs/cgroup/server /sys/fs/cgroup/work /sys/fs/cgroup/work/sandbar-*"
      : "/sys/fs/cgroup/freezer /sys/fs/cgroup/freezer/sandbar-*";
    const script = `
      ${own}
      server=$PPID # the shell's parent: the server that started it
      case "$(tr '\\0' ' ' < /proc/$server/cmdline)" in *deno*) ;; *) echo "$server: no server";; esac
      for n in $(seq 0 300); do
        d=/proc/$server/fd/$n
        readlink $d >/dev/null 2>&1 && echo "read the server's $n"
        echo $$ > $d/tasks 2>/dev/null && echo "moved through the server's $n"
        echo $$ > $d/cgroup.procs 2>/dev/null && echo "moved through the server's $n"
        mkdir $d/escape 2>/dev/null && echo "made a cgroup through the server's $n"
        echo FROZEN > $d/freezer.state 2>/dev/null && echo "froze through the server's $n"
        echo 1 > $d/cgroup.freeze 2>/dev/null && echo "froze through the server's $n"
      done
      for p in /proc/[0-9]*; do
        [ "\${p#/proc/}" = "$server" ] && continue
        for f in $p/fd/*; do [ -e "$f/cgroup.procs" ] && echo "$f is a cgroup"; done
      done
      for d in ${mounted}; do
        echo $$ > $d/tasks 2>/dev/null && echo "moved into $d"
        echo $$ > $d/cgroup.procs 2>/dev/null && echo "moved into $d"
        mkdir $d/escape 2>/dev/null && echo "made $d/escape"
      done
      ${own}
    `;
    // (Its own deadline: each of the ~2000 tries is a process; a slow machine, such as an
    // emulated VM, takes over the default minute.)
    const r = await sandbox.commands.run(script, { timeout: 600 });
    assert.equal(r.exitCode, 0, r.stderr);
    // Its tree before and after, and nothing else: no way worked.
    const [tree, after, ...more] = r.stdout.split("\n");
    assert.match(tree, TREE_LINE, r.stdout);
    assert.deepEqual([after, ...more], [tree, ""], r.stdout);
    // Nothing was made in the sandbox's cgroup on the host either.
    const support = cgroupSupport();
    assert.ok(support.ok);
    const [dir, expected] = support.version === 1
      ? [`${support.parents.freezer}/${sandbox.id}`, /^sandbar-\d+$/]
      : [`${support.parent}/${sandbox.id}`, /^(server|work|work\/sandbar-\d+)$/];
    assert.ok(Deno.statSync(dir).isDirectory, dir);
    const below = (d: string, at: string): string[] =>
      [...Deno.readDirSync(d)].filter((e) => e.isDirectory).flatMap((e) => {
        const name = at ? `${at}/${e.name}` : e.name;
        // A tree's own cgroups (sandbar-<pid>/t<n>-<tag>) are the server's; not looked into.
        return /^(work\/)?sandbar-\d+$/.test(name)
          ? [name]
          : [name, ...below(`${d}/${e.name}`, name)];
      });
    assert.deepEqual(below(dir, "").filter((n) => !expected.test(n)), []);
  },
});

Deno.test({
  name: "local sandbox without a cgroup (limits: false): trees by session, and the warning says so",
  ignore: !hasBwrap,
  async fn() {
    await using sandbox = await Sandbox.create({
      provider: new LocalProvider({ home, limits: false }),
    });
    const said = (await sandbox.server.discover()).warnings
      .filter((w) => w.startsWith("Process trees"));
    assert.equal(said.length, 1, "the session fallback is said");
    assert.match(said[0], /setsid after its parent exited may outlive/);
    // What the session way finds still ends with the command.
    const e = new Escapes();
    const names = ["double", "disown", "pgrp"];
    const r = await sandbox.commands.run(`${e.start(names)} ${e.waitFor(names)} echo started`);
    assert.equal(r.stdout, "started\n", r.stderr);
    await e.allGone("the command", names);
  },
});
