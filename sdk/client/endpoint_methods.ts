/**
 * {@linkcode ENDPOINT_METHODS}: every endpoint id of the server's table → the `ServerClient`
 * methods that call it. `tests/sdk/endpoint_methods_test.ts` fails when an id of the server's
 * table is missing here, or when a named method does not exist on a real client.
 *
 * @module
 */

import { agentsMethodName } from "./agents.ts";
import { ROUTES } from "./routes.ts";

const SERVER_GROUPS: Readonly<Record<string, readonly string[]>> = {
  health: ["health"],
  capabilities: ["discover"],
  capabilities_check: ["check", "capabilities.checkPath"],
  commands_list: ["commands.list"],
  commands_run: ["commands.run"],
  files_list: ["files.list"],
  files_stat: ["files.stat", "files.exists"],
  files_mkdir: ["files.mkdir"],
  files_delete: ["files.delete"],
  files_move: ["files.move"],
  files_search: ["files.search"],
  files_archive: ["files.archive"],
  files_watch: ["files.watch", "files.watchFor"],
  files_upload: ["files.upload", "files.uploadFile"],
  files_download: [
    "files.download",
    "files.downloadStream",
    "files.downloadFile",
    "files.readText",
  ],
  files_upload_legacy: ["files.uploadLegacy"],
  files_download_legacy: ["files.downloadLegacy"],
  shell: ["process.shell"],
  shell_stream: ["process.shellStream", "process.runStream"],
  process_start: ["process.start"],
  process_list: ["process.list"],
  process_get: ["process.get", "process.wait"],
  process_signal: ["process.signal", "process.terminate", "process.kill"],
  process_stdin: ["process.sendStdin", "process.closeStdin"],
  process_output: ["process.output", "process.follow"],
  pty_create: ["pty.create"],
  pty_list: ["pty.list"],
  pty_get: ["pty.get"],
  pty_resize: ["pty.resize"],
  pty_delete: ["pty.delete"],
  pty_connect: ["pty.connect"],
  system_info: ["system.info"],
  system_metrics: ["system.metrics"],
  system_env: ["system.env"],
  system_set_env: ["system.setEnv"],
  system_ports: ["system.ports"],
  system_packages: ["system.packages"],
  run_code: [
    "devtools.runCode",
    "devtools.runCodeStream",
    "devtools.createContext",
    "devtools.listContexts",
    "devtools.restartContext",
    "devtools.removeContext",
  ],
  git_status: ["devtools.gitStatus"],
  git_diff: ["devtools.gitDiff"],
  browser_navigate: ["browser.navigate"],
  browser_screenshot: ["browser.screenshot"],
  browser_content: ["browser.content"],
  browser_click: ["browser.click"],
  browser_type: ["browser.type"],
  browser_evaluate: ["browser.evaluate"],
  browser_pdf: ["browser.pdf"],
  browser_console: ["browser.console"],
};

/**
 * Endpoint id → the client methods that call it, as dotted paths on a `ServerClient`
 * (`"files.download"` is `client.files.download`; `"capabilities.checkPath"` is a method of
 * the discovered `client.capabilities`). The agents group maps each id to its pass-through
 * method (`agents_sessions_create` → `agents.sessions.create`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ENDPOINT_METHODS } from "@sandbar/sandbar/sdk";
 *
 * assert.deepEqual(ENDPOINT_METHODS.shell, ["process.shell"]);
 * assert.ok(ENDPOINT_METHODS.files_download.includes("files.readText"));
 * assert.deepEqual(ENDPOINT_METHODS.agents_sessions_create, ["agents.sessions.create"]);
 * ```
 */
export const ENDPOINT_METHODS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  ...SERVER_GROUPS,
  ...Object.fromEntries(
    Object.keys(ROUTES)
      .filter((id) => id.startsWith("agents_"))
      .map((id) => [id, [agentsMethodName(id)]]),
  ),
});
