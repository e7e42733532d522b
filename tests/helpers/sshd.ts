/**
 * A throwaway OpenSSH server for the tests that reach a host over SSH through the egress proxy:
 * `sshd -D -e -f <config>` on `hostname` with its own host key, config, pid file and
 * authorized key (a client key it makes) in a temporary directory; never the system's sshd.
 * It logs in `root` by that key only (PAM on, as Debian builds it, so a locked root password
 * does not stop a key login).
 *
 * @module
 */

import { join } from "node:path";

/** Where the test's sshd is, or null when openssh-server is not installed. */
export const SSHD: string | null = (() => {
  try {
    return Deno.statSync("/usr/sbin/sshd").isFile ? "/usr/sbin/sshd" : null;
  } catch {
    return null;
  }
})();

/** A running sshd and the client's side of it. */
export interface TestSshd {
  /** The port it listens on (on the hostname given). */
  port: number;
  /** The client's private key (OpenSSH format). */
  clientKey: string;
  /** A `known_hosts` line for `[hostname]:port`. */
  knownHosts: string;
  /** Stop it and remove its directory. */
  close(): Promise<void>;
}

async function keygen(file: string): Promise<void> {
  const out = await new Deno.Command("ssh-keygen", {
    args: ["-q", "-t", "ed25519", "-N", "", "-C", "sandbar-test", "-f", file],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
}

/** A free TCP port on `hostname` (closed again; sshd binds it a moment later). */
function freePort(hostname: string): number {
  const listener = Deno.listen({ hostname, port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** Start an sshd on `hostname`; resolves once it accepts connections. */
export async function startSshd(hostname: string): Promise<TestSshd> {
  if (!SSHD) throw new Error("openssh-server is not installed");
  // sshd's privilege separation directory, as the package's own service start makes it.
  await Deno.mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  const dir = await Deno.makeTempDir({ prefix: "sandbar-sshd-" });
  await keygen(join(dir, "host_key"));
  await keygen(join(dir, "client_key"));
  await Deno.copyFile(join(dir, "client_key.pub"), join(dir, "authorized_keys"));
  const port = freePort(hostname);
  const config = [
    `ListenAddress ${hostname}:${port}`,
    `HostKey ${join(dir, "host_key")}`,
    `PidFile ${join(dir, "sshd.pid")}`,
    `AuthorizedKeysFile ${join(dir, "authorized_keys")}`,
    "StrictModes no",
    "UsePAM yes",
    "PermitRootLogin prohibit-password",
    "PubkeyAuthentication yes",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "PrintMotd no",
    "",
  ].join("\n");
  await Deno.writeTextFile(join(dir, "sshd_config"), config);
  const child = new Deno.Command(SSHD, {
    args: ["-D", "-e", "-f", join(dir, "sshd_config")],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* gone */ }
    await child.status;
    await stderr;
    await Deno.remove(dir, { recursive: true });
  };
  const deadline = Date.now() + 10_000;
  while (true) {
    try {
      (await Deno.connect({ hostname, port })).close();
      break;
    } catch {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`sshd did not listen on ${hostname}:${port}: ${await stderr}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  const hostKey = (await Deno.readTextFile(join(dir, "host_key.pub"))).trim().split(" ");
  return {
    port,
    clientKey: await Deno.readTextFile(join(dir, "client_key")),
    knownHosts: `[${hostname}]:${port} ${hostKey[0]} ${hostKey[1]}\n`,
    close: stop,
  };
}
