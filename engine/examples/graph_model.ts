/**
 * The `graphs:1` fields the example explorer reads. The contract fixes only `name` and `kind` of
 * each action and state node; this is the rest, as the explorer defines it.
 *
 * Actions (`graphs.actions`), kind `process`: one sequential thread of the subject.
 *
 * | field | type | meaning |
 * |---|---|---|
 * | `node` | string | where the thread runs; the `<node>` of a replay move (default: `name`) |
 * | `steps` | array of Step | the thread's program, taken in order |
 * | `loop` | boolean | start over after the last step instead of finishing (default false) |
 *
 * Step: `{ token, guard?, assign? }`; `token` is the `<token>` of a replay move, `guard` an
 * expression that must hold for the step to be enabled, `assign` a map from variable to
 * expression, all evaluated in the state before the step (a step is atomic).
 *
 * States (`graphs.states`): kind `variable` with `initial` (number, boolean or string), and kind
 * `assertion` with `expr`, a condition a question names by `condition.name`.
 *
 * Expressions are JSON: a literal, `{ "var": name }`, or `{ "op": op, "args": [...] }` with op one
 * of `+ - * / % == != < <= > >= and or not if min max`.
 *
 * The scheduler interleaves threads: at each state every thread whose next step's guard holds is
 * enabled, in the order the actions are listed. A state with nothing enabled is terminal; it is a
 * deadlock when some thread has not finished.
 *
 * @module
 */
import { z } from "zod";
import type { Graphs, Scalar } from "../types.ts";

/** An expression over the variables. */
export type Expr = Scalar | { var: string } | { op: string; args: Expr[] };

const expr: z.ZodType<Expr> = z.lazy(() =>
  z.union([
    z.number(),
    z.boolean(),
    z.string(),
    z.strictObject({ var: z.string() }),
    z.strictObject({ op: z.enum(OPS), args: z.array(expr) }),
  ])
);
const OPS = [
  "+",
  "-",
  "*",
  "/",
  "%",
  "==",
  "!=",
  "<",
  "<=",
  ">",
  ">=",
  "and",
  "or",
  "not",
  "if",
  "min",
  "max",
] as const;

const processNode = z.strictObject({
  name: z.string(),
  kind: z.literal("process"),
  node: z.string().regex(/^[^\s@,]+$/).optional(),
  steps: z.array(z.strictObject({
    token: z.string().regex(/^[^\s@,]+$/),
    guard: expr.optional(),
    assign: z.record(z.string(), expr).optional(),
  })).min(1),
  loop: z.boolean().optional(),
});
const stateNode = z.discriminatedUnion("kind", [
  z.strictObject({
    name: z.string(),
    kind: z.literal("variable"),
    initial: z.union([z.number(), z.boolean(), z.string()]),
  }),
  z.strictObject({ name: z.string(), kind: z.literal("assertion"), expr }),
]);

/** One thread of the subject. */
export interface Thread {
  /** The node moves are taken at. */
  node: string;
  /** Its program. */
  steps: { token: string; guard?: Expr; assign: [number, Expr][] }[];
  /** Whether it starts over after its last step. */
  loop: boolean;
}

/** A graphs:1 model compiled for exploration: variables by index. */
export interface Program {
  /** Variable names, in state order. */
  variables: string[];
  /** Initial values. */
  initial: Scalar[];
  /** The threads. */
  threads: Thread[];
  /** Assertions by name. */
  assertions: Map<string, Expr>;
}

/** Compiles `graphs`, or throws an Error naming what is wrong with it. */
export function compile(graphs: Graphs): Program {
  const variables: string[] = [];
  const initial: Scalar[] = [];
  const assertions = new Map<string, Expr>();
  for (const [i, raw] of (graphs.states ?? []).entries()) {
    const parsed = stateNode.safeParse(raw);
    if (!parsed.success) throw new Error(`states[${i}]: ${z.prettifyError(parsed.error)}`);
    if (parsed.data.kind === "variable") {
      variables.push(parsed.data.name);
      initial.push(parsed.data.initial);
    } else assertions.set(parsed.data.name, parsed.data.expr);
  }
  const index = (name: string) => {
    const at = variables.indexOf(name);
    if (at < 0) throw new Error(`assignment to ${name}, which is not a variable`);
    return at;
  };
  const threads: Thread[] = [];
  for (const [i, raw] of (graphs.actions ?? []).entries()) {
    const parsed = processNode.safeParse(raw);
    if (!parsed.success) throw new Error(`actions[${i}]: ${z.prettifyError(parsed.error)}`);
    const node = parsed.data.node ?? parsed.data.name;
    if (threads.some((t) => t.node === node)) throw new Error(`two threads run at node ${node}`);
    threads.push({
      node,
      loop: parsed.data.loop ?? false,
      steps: parsed.data.steps.map((s) => ({
        token: s.token,
        guard: s.guard,
        assign: Object.entries(s.assign ?? {}).map(([name, e]) => [index(name), e]),
      })),
    });
  }
  if (threads.length === 0) throw new Error("the model has no action of kind process");
  return { variables, initial, threads, assertions };
}

/** Parses a condition given as JSON text, the way a question without a named assertion gives it. */
export function parseExpr(text: string): Expr {
  return expr.parse(JSON.parse(text));
}

/** Evaluates `e` over the values `vars` (indexed like `program.variables`). */
export function evaluate(e: Expr, program: Program, vars: readonly Scalar[]): Scalar {
  if (typeof e !== "object") return e;
  if ("var" in e) {
    const at = program.variables.indexOf(e.var);
    if (at < 0) throw new Error(`unknown variable ${e.var}`);
    return vars[at];
  }
  const a = e.args.map((arg) => evaluate(arg, program, vars));
  const n = a as number[];
  switch (e.op) {
    case "+":
      return n.reduce((x, y) => x + y, 0);
    case "-":
      return a.length === 1 ? -n[0] : n[0] - n[1];
    case "*":
      return n.reduce((x, y) => x * y, 1);
    case "/":
      return Math.trunc(n[0] / n[1]);
    case "%":
      return n[0] % n[1];
    case "==":
      return a[0] === a[1];
    case "!=":
      return a[0] !== a[1];
    case "<":
      return n[0] < n[1];
    case "<=":
      return n[0] <= n[1];
    case ">":
      return n[0] > n[1];
    case ">=":
      return n[0] >= n[1];
    case "and":
      return a.every(Boolean);
    case "or":
      return a.some(Boolean);
    case "not":
      return !a[0];
    case "if":
      return a[0] ? a[1] : a[2];
    case "min":
      return Math.min(...n);
    case "max":
      return Math.max(...n);
  }
  throw new Error(`unknown operator ${e.op}`);
}
