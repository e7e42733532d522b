/**
 * The languages of `run_code`, their other names, and how the kernel of each is started.
 *
 * Python runs on Debian's `python3-ipykernel`, with the Python those packages are installed for
 * (`/usr/bin/python3` where it can import `ipykernel`, else the first `python3` in the system
 * directories that can). JavaScript and TypeScript run on Deno's own Jupyter kernel (`deno jupyter --kernel`) of
 * the server's Deno, `Deno.execPath()`. Bash is a persistent `bash --noprofile --norc`.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import type { Spawner } from "../confine/spawner.ts";
import { findSystemPython } from "../process/system_python.ts";
import type { ServerState } from "../state.ts";

/** A language of `run_code`. */
export type Language = "python" | "javascript" | "typescript" | "bash";

/** The languages, with the names they are also known by. */
const ALIASES: Readonly<Record<string, Language>> = {
  python: "python",
  python3: "python",
  py: "python",
  javascript: "javascript",
  js: "javascript",
  typescript: "typescript",
  ts: "typescript",
  bash: "bash",
  sh: "bash",
  shell: "bash",
};

/** The language asked for (default python), if the policy's `params.languages` admits it. */
export function allowedLanguage(state: ServerState, raw: string | undefined): Language {
  const language = ALIASES[(raw ?? "python").toLowerCase()];
  if (!language || !state.policy.languages.includes(language)) {
    throw new ApiError(
      "language_not_allowed",
      `Language ${raw ?? "python"} is not allowed; allowed: ${state.policy.languages.join(", ")}`,
      { param: "language" },
    );
  }
  return language;
}

/**
 * The programs a context of `language` executes, as `allow_commands` names them: the kernel
 * bridge is Python for every language (it drives the kernels), then the language's own runtime.
 * Under an allow list each must be admitted, as the confinement executes nothing else.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { runtimePrograms } from "./languages.ts";
 * assert.deepEqual(runtimePrograms("typescript"), ["python3", "deno"]);
 * assert.deepEqual(runtimePrograms("bash"), ["python3", "bash"]);
 * ```
 */
export function runtimePrograms(language: Language): string[] {
  const own = language === "python" ? [] : language === "bash" ? ["bash"] : ["deno"];
  return ["python3", ...own];
}

/** What the bridge needs to start a kernel. */
export interface KernelLaunch {
  /** `python`, `deno` or `bash` (the bridge's kinds). */
  kind: "python" | "deno" | "bash";
  /** The kernel's command; `{connection_file}` is filled in by jupyter_client. */
  argv?: string[];
  /** How an interrupt reaches it: SIGINT, or Jupyter's `interrupt_request` message. */
  interrupt?: "signal" | "message";
  /** Variables the kernel needs on top of the context's environment. */
  env: Record<string, string>;
}

let python: Promise<string | null> | undefined;

/**
 * The Python that has `ipykernel` and `jupyter_client`, or null (looked up once). The probe is
 * one of the server's own helper programs: it runs on the `system` confinement (`spawner`,
 * where there is one) and looks only in the system directories, never through a `PATH` a
 * caller set.
 */
export function kernelPython(spawner?: Spawner): Promise<string | null> {
  python ??= findSystemPython("import ipykernel, jupyter_client", spawner);
  return python;
}

/** How to start the kernel of `language`. Throws `process_invalid` when it is not installed. */
export async function kernelLaunch(
  language: Language,
  env: Record<string, string>,
  spawner?: Spawner,
): Promise<KernelLaunch> {
  if (language === "bash") return { kind: "bash", env: {} };
  if (language === "javascript" || language === "typescript") {
    return {
      kind: "deno",
      argv: [Deno.execPath(), "jupyter", "--kernel", "--conn", "{connection_file}"],
      interrupt: "message",
      env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
    };
  }
  const exe = await kernelPython(spawner);
  if (!exe) throw notInstalled();
  return {
    kind: "python",
    argv: [
      exe,
      "-Xfrozen_modules=off",
      "-m",
      "ipykernel_launcher",
      "-f",
      "{connection_file}",
      // IPython's SQLite history costs about 6 ms a run and keeps code on disk; In/Out and _
      // still work in memory.
      "--HistoryManager.enabled=False",
    ],
    interrupt: "signal",
    env: {
      // Figures come back as PNG results without plt.show() or savefig.
      MPLBACKEND: "module://matplotlib_inline.backend_inline",
      PYDEVD_DISABLE_FILE_VALIDATION: "1",
      PYTHONUNBUFFERED: "1",
      ...matplotlibrc(env),
    },
  };
}

/**
 * Debian's matplotlib reads `/etc/matplotlibrc` and fails without it; a sandbox that shows only
 * part of `/etc` gets the same defaults from the copy in the package's data directory.
 */
function matplotlibrc(env: Record<string, string>): Record<string, string> {
  const exists = (p: string) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  };
  const shared = "/usr/share/matplotlib/mpl-data/matplotlibrc";
  if (env.MATPLOTLIBRC || exists("/etc/matplotlibrc") || !exists(shared)) return {};
  return { MATPLOTLIBRC: shared };
}

/** The refusal when no Python with ipykernel is installed. */
export function notInstalled(): ApiError {
  return new ApiError(
    "process_invalid",
    "No python3 with ipykernel and jupyter_client is installed " +
      "(Debian: apt-get install python3-ipykernel)",
    { param: "language" },
  );
}
