/**
 * The import-cycle check: fails when any non-test module of `server/`, `sdk/`, `engine/` or
 * `shared/` can reach itself through its imports, or when an import crosses a layer boundary the
 * wrong way ({@linkcode LAYER_RULES}: shared leaves, the engine alone, the server never importing
 * the SDK and the SDK only the server modules listed in {@linkcode SDK_SERVER_IMPORTS}, the agents
 * group's layers). Imports run one way (transport on top, domain in the middle,
 * storage at the bottom); a cycle is the sign that one of them runs back up, and it makes "read
 * this part without the rest" impossible. `deno task check` runs it.
 *
 * The module graph is Deno's own (`deno info --json`, type-only and dynamic imports included), read
 * from one root that imports every module of the scanned folders, so modules that no entry point
 * reaches are checked too. Each strongly connected component of more than one module (or a module
 * importing itself) is reported with one shortest cycle through it, as repository paths.
 *
 * ```sh
 * deno run --allow-read --allow-run scripts/check_cycles.ts            # this repository
 * deno run --allow-read --allow-run scripts/check_cycles.ts --root DIR # another tree
 * ```
 *
 * @module
 */

import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The folders whose modules are checked, relative to the root. */
export const CHECKED_DIRS: readonly string[] = ["server", "sdk", "engine", "shared"];

/** One cycle found: the files of its strongly connected component and one cycle through them. */
export interface ImportCycle {
  /** Every module of the component, as paths relative to the root, sorted. */
  readonly members: readonly string[];
  /** One shortest cycle, first module repeated at the end: `a.ts → b.ts → a.ts`. */
  readonly path: readonly string[];
}

/** Whether a file is a test module (never part of the checked graph). */
function isTestFile(rel: string): boolean {
  return /(^|\/)tests?\//.test(rel) || /[._]test\.(ts|tsx|js|mjs)$/.test(rel);
}

async function listModules(root: string, dirs: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  async function walk(dir: string): Promise<void> {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return;
      throw e;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (
        entry.isFile && /\.(ts|tsx|js|mjs)$/.test(entry.name) && !entry.name.endsWith(".d.ts")
      ) {
        if (!isTestFile(relative(root, path))) out.push(path);
      }
    }
  }
  for (const dir of dirs) await walk(join(root, dir));
  return out.sort();
}

interface InfoDependency {
  code?: { specifier?: string };
  type?: { specifier?: string };
}
interface InfoModule {
  specifier: string;
  dependencies?: InfoDependency[];
}

/** Reads Deno's module graph for every module under `dirs` of `root`: file → files it imports. */
export async function readImportGraph(
  root: string,
  dirs: readonly string[] = CHECKED_DIRS,
): Promise<Map<string, Set<string>>> {
  const files = await listModules(root, dirs);
  const graph = new Map<string, Set<string>>();
  if (files.length === 0) return graph;
  const entry = "data:application/typescript," +
    encodeURIComponent(
      files.map((f) => `import ${JSON.stringify(pathToFileURL(f).href)};`).join("\n"),
    );
  const config = join(root, "deno.json");
  let hasConfig = false;
  try {
    hasConfig = Deno.statSync(config).isFile;
  } catch { /* no config: plain relative imports only */ }
  const args = ["info", "--json", ...(hasConfig ? ["--config", config] : ["--no-config"]), entry];
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: root,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`deno info failed: ${new TextDecoder().decode(out.stderr).trim()}`);
  }
  const info = JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: InfoModule[] };
  const inScope = new Set(files.map((f) => pathToFileURL(f).href));
  for (const mod of info.modules) {
    if (!inScope.has(mod.specifier)) continue;
    const from = relative(root, fileURLToPath(mod.specifier));
    const targets = graph.get(from) ?? new Set<string>();
    graph.set(from, targets);
    for (const dep of mod.dependencies ?? []) {
      for (const spec of [dep.code?.specifier, dep.type?.specifier]) {
        if (spec && inScope.has(spec)) targets.add(relative(root, fileURLToPath(spec)));
      }
    }
  }
  return graph;
}

/** The strongly connected components of a graph (Tarjan), iteratively so deep graphs do not overflow. */
function components(graph: Map<string, Set<string>>): string[][] {
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const result: string[][] = [];
  for (const start of [...graph.keys()].sort()) {
    if (indexOf.has(start)) continue;
    const work: Array<{ node: string; next: Iterator<string> }> = [];
    const enter = (node: string) => {
      indexOf.set(node, index);
      low.set(node, index);
      index++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, next: [...(graph.get(node) ?? [])].sort()[Symbol.iterator]() });
    };
    enter(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const step = frame.next.next();
      if (!step.done) {
        const to = step.value;
        if (!indexOf.has(to)) enter(to);
        else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, indexOf.get(to)!));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent)!, low.get(frame.node)!));
      }
      if (low.get(frame.node) === indexOf.get(frame.node)) {
        const members: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          members.push(member);
        } while (member !== frame.node);
        result.push(members.sort());
      }
    }
  }
  return result;
}

/** One shortest cycle through `start` inside `members` (breadth first). */
function shortestCycle(
  graph: Map<string, Set<string>>,
  members: Set<string>,
  start: string,
): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i];
    for (const to of [...(graph.get(node) ?? [])].sort()) {
      if (!members.has(to)) continue;
      if (to === start) {
        const path = [start];
        for (let at = node; at !== start; at = cameFrom.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(to)) {
        cameFrom.set(to, node);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

/** Every import cycle of a graph, largest component first. */
export function findCycles(graph: Map<string, Set<string>>): ImportCycle[] {
  const cycles: ImportCycle[] = [];
  for (const members of components(graph)) {
    const self = members.length === 1 && graph.get(members[0])?.has(members[0]);
    if (members.length < 2 && !self) continue;
    cycles.push({ members, path: shortestCycle(graph, new Set(members), members[0]) });
  }
  return cycles.sort((a, b) =>
    b.members.length - a.members.length || (a.path[0] < b.path[0] ? -1 : 1)
  );
}

/** The report printed for a set of cycles. */
export function describeCycles(cycles: readonly ImportCycle[]): string {
  const lines = [
    `${cycles.length} import cycle(s) among the modules of ${CHECKED_DIRS.join(", ")}:`,
  ];
  for (const cycle of cycles) {
    lines.push("", `  ${cycle.path.join(" → ")}`);
    if (cycle.members.length > cycle.path.length - 1) {
      lines.push(`  (${cycle.members.length} modules in this circle: ${cycle.members.join(", ")})`);
    }
  }
  return lines.join("\n");
}

/**
 * An import that must not exist: a module matching `from` importing one matching `to` (unless
 * the importer matches `unless`). Cycles are one failure of direction; these rules name the
 * layer boundaries a cycle-free graph can still cross.
 */
export interface LayerRule {
  /** Importers the rule is about (a repository path). */
  readonly from: RegExp;
  /** What they must not import. */
  readonly to: RegExp;
  /** Importers the rule leaves out. */
  readonly unless?: RegExp;
  /** Imported modules the rule leaves out. */
  readonly allowed?: RegExp;
  /** Why, for the message. */
  readonly why: string;
}

/**
 * The server modules the SDK may import directly, each for a reason. A sandbox provider does on
 * the host what the server does inside, with the server's own code: the policy's schema, loader
 * and compiler; the egress rules, proxy, bridge and TLS interception; the audit line; the
 * launcher and the endpoint table it passes; the relay's hardening. The rest are the shapes and
 * constants of answers (the version, a file's info, a listening port). Any other import of the
 * server by the SDK fails the check: adding one is a decision, made here.
 */
export const SDK_SERVER_IMPORTS: RegExp =
  /^server\/(egress\/(rules|bridge|proxy|tls_intercept)|policy\/(load|compile|schema)|pipeline\/audit|confine\/hardening|endpoints|launch|version|files\/info|handlers\/system\/ports)\.ts$/;

/** The direction of imports between the parts and inside the agents group, as data. */
export const LAYER_RULES: readonly LayerRule[] = [
  {
    from: /^shared\//,
    to: /^(server|sdk|engine)\//,
    why: "shared/ holds leaves the three parts use; it imports none of them",
  },
  {
    from: /^engine\//,
    to: /^(server|sdk)\//,
    why: "the engine stands alone: it imports neither the server nor the SDK",
  },
  {
    from: /^server\//,
    to: /^sdk\//,
    why: "the server never imports the SDK: the SDK starts and drives the server from outside",
  },
  {
    from: /^sdk\//,
    to: /^server\//,
    allowed: SDK_SERVER_IMPORTS,
    why: "the SDK imports only the server modules it shares with it (SDK_SERVER_IMPORTS)",
  },
  {
    from: /^server\/agents\//,
    to: /^server\/handlers\//,
    why: "the agents group starts processes through server/process/, not the HTTP handlers",
  },
  {
    from: /^server\/agents\//,
    to: /^server\/agents\/service\.ts$/,
    unless: /^server\/agents\/(handlers\.ts|resources\/|automations\/(handlers|\w+_resource)\.ts)/,
    why: "only the HTTP layer looks the agents service up; lower layers are handed the core",
  },
  {
    from: /^server\/agents\//,
    to: /^server\/agents\/(resources\/|automations\/(handlers|\w+_resource)\.ts|handlers\.ts)/,
    unless: /^server\/agents\/(handlers\.ts|resources\/|automations\/(handlers|\w+_resource)\.ts)/,
    why: "nothing below the agents HTTP layer imports it (domain functions live in domain/)",
  },
];

/** Every import of the graph a rule forbids, as `importer → imported (why)`. */
export function findLayerViolations(
  graph: Map<string, Set<string>>,
  rules: readonly LayerRule[] = LAYER_RULES,
): string[] {
  const found: string[] = [];
  for (const [from, targets] of [...graph].sort(([a], [b]) => (a < b ? -1 : 1))) {
    for (const to of [...targets].sort()) {
      for (const rule of rules) {
        if (!rule.from.test(from) || !rule.to.test(to)) continue;
        if (rule.unless?.test(from) || rule.allowed?.test(to)) continue;
        found.push(`${from} → ${to} (${rule.why})`);
      }
    }
  }
  return found;
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--root");
  const root = at >= 0 ? Deno.args[at + 1] : fileURLToPath(new URL("..", import.meta.url));
  const graph = await readImportGraph(root);
  const cycles = findCycles(graph);
  const violations = findLayerViolations(graph);
  if (cycles.length > 0) console.error(describeCycles(cycles));
  if (violations.length > 0) {
    console.error(
      [`${violations.length} import(s) against the layers:`, ...violations.map((v) => `  ${v}`)]
        .join("\n"),
    );
  }
  if (cycles.length > 0 || violations.length > 0) Deno.exit(1);
  console.log(
    `no import cycles among the modules of ${CHECKED_DIRS.join(", ")}, and imports run one way`,
  );
}
