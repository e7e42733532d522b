/**
 * Plain TypeScript shapes of External Engine Protocol v1. The zod schemas that enforce them live
 * in `schema.ts` and stay internal, so the public API has no zod types in it; the enumerations
 * come from `enums.ts`, which the schemas use too.
 *
 * @module
 */
import type {
  BOUND_NAMES,
  CLAIMS,
  DRAW_MODES,
  ERROR_CODES,
  FREE_PARTS,
  QUESTION_KINDS,
  STRENGTHS,
  WITNESS_KINDS,
} from "./enums.ts";

/** A kind of question an engine can answer. */
export type QuestionKind = typeof QUESTION_KINDS[number];

/** What a result claims. */
export type Claim = typeof CLAIMS[number];

/** How strong a claim is, weakest first: `not covered` < `observed` < `witnessed` < `bounded` < `proved`. */
export type Strength = typeof STRENGTHS[number];

/** The kind of witness an engine returns. */
export type WitnessKind = typeof WITNESS_KINDS[number];

/** A bound an engine can take. */
export type BoundName = typeof BOUND_NAMES[number];

/** The code of an error response. */
export type ErrorCode = typeof ERROR_CODES[number];

/** A model form: `sources`, `rdf` or `graphs:<version>`. */
export type ModelForm = string;

/** A number, a boolean or a string. */
export type Scalar = number | boolean | string;

/** A named value. */
export interface Value {
  /** A named value of the tool protocol. */
  name: string;
  /** The value. */
  value: Scalar;
  /** Unit by its short name. */
  unit?: string;
}

/** A free input of a question. */
export interface FreeInput {
  /** Name of the input. */
  name: string;
  /** Its type. */
  type?: string;
  /** Its unit. */
  unit?: string;
  /** Its domain, spelled in the notation. */
  domain?: string;
}

/** A named condition, with its text in the notation. */
export interface Condition {
  /** Name of the condition. */
  name: string;
  /** Text of the condition. */
  text?: string;
}

/** A feature pinned to a value. */
export interface Pinned {
  /** Name of the feature. */
  name: string;
  /** Its value, spelled in the notation. */
  text: string;
}

/** A set of conditions over features. */
export interface ConditionSet {
  /** Name of the set. */
  name: string;
  /** The features it ranges over. */
  features: FreeInput[];
  /** The assertions it makes. */
  assertions: Condition[];
  /** Features pinned to values. */
  pinned?: Pinned[];
}

/** One parameter range of a sweep. */
export interface Range {
  /** The parameter. */
  parameter: string;
  /** Its type. */
  type: string;
  /** Its unit. */
  unit?: string;
  /** First value. */
  from: Scalar;
  /** Last value. */
  to: Scalar;
  /** Step between values. */
  step?: Scalar;
}

/** A sweep over parameter ranges. */
export interface Sweep {
  /** The ranges. */
  ranges: Range[];
  /** Whether rows are sampled. */
  sampled?: boolean;
  /** Number of samples. */
  samples?: number;
  /** Seed the rows are drawn from. */
  seed?: number;
  /** Number of runs. */
  runs?: number;
}

/** A question about a model. */
export interface Question {
  /** The kind of question. */
  kind: QuestionKind;
  /** Qualified name of the subject as the surface spelled it. */
  subject: string;
  /** The subject's declaration kind, as a manifest's `subjects` spells it. */
  subjectKind?: string;
  /** Scheduling policy as `-schedule` spells it. */
  schedule: string;
  /** Seed for the runs' modeled draws. */
  modelSeed?: number;
  /** How random-function draws resolve. */
  draws?: typeof DRAW_MODES[number];
  /** Seconds per clock tick. */
  clockStep?: number;
  /** What is left free: the schedule, the inputs, or both. */
  free: typeof FREE_PARTS[number][];
  /** The condition asked about. */
  condition?: Condition;
  /** Condition sets. */
  conditions?: ConditionSet[];
  /** Bound values. */
  bindings?: Value[];
  /** Free inputs. */
  inputs?: FreeInput[];
  /** A sweep. */
  sweep?: Sweep;
}

/** One source document of a model. */
export interface SourceDocument {
  /** Path of the document. */
  path: string;
  /** Its text. */
  text: string;
}

/** A model as source documents. */
export interface Sources {
  /** Version of the standard library the host embeds. */
  library: string;
  /** The documents. */
  documents: SourceDocument[];
}

/**
 * One node of a graph (an action or a state). The contract fixes `name` and `kind`; every further
 * field is the engine's to define (see `engine/examples/graph_model.ts` for the example engine's).
 */
export interface GraphNode {
  /** Name of the node. */
  name: string;
  /** Kind of the node. */
  kind: string;
  /** Further fields, defined by the graph's consumer. */
  [field: string]: unknown;
}

/** A model as lowered graphs. */
export interface Graphs {
  /** Graph format version; the host serves version 1. */
  version: number;
  /** The subject the graphs were lowered for. */
  subject: string;
  /** Lowered graphs of the subject and of every behavior it performs. */
  actions?: GraphNode[];
  /** State graphs. */
  states?: GraphNode[];
}

/** A model, in the forms the engine's entry declares. */
export interface Model {
  /** The model as source documents. */
  sources?: Sources;
  /** The model as lowered graphs. */
  graphs?: Graphs;
}

/** A bound sent with a run, or reported in a result. */
export interface Bound {
  /** The bound's name. */
  name: string;
  /** The limit; 0 leaves the bound open. */
  limit: number;
  /** Whether the limit was hit. */
  reached?: boolean;
}

/** What a run may spend. Every field is optional. */
export interface Budget {
  /** Absolute deadline, an RFC 3339 date-time. The host enforces it. */
  deadline?: string;
  /** Maximum schedule length. */
  depth?: number;
  /** Maximum number of steps. */
  steps?: number;
  /** Maximum number of runs. */
  runs?: number;
  /** Maximum memory. */
  memory?: number;
  /** Maximum parallel jobs. */
  jobs?: number;
}

/** One feature of the initial state as the engine accounts for it. */
export interface Input {
  /** Name of the feature. */
  name: string;
  /** Its type. */
  type?: string;
  /** Its sort. */
  sort?: string;
  /** Its domain. */
  domain?: string;
  /** Whether it is free over its domain. */
  free?: boolean;
  /** Whether it is optional. */
  optional?: boolean;
  /** The value a witness chose, spelled in the notation. */
  value?: string;
}

/** Evidence for a claim: schedules in the replay format, or an assignment of inputs. */
export interface Witness {
  /** Schedules, each lines of the form `step N: <token>@<node> first of ...`. */
  schedules?: string[];
  /** The move a violation is evaluated at; absent means the end of the schedule. */
  at?: number;
  /** The feature two sensitive schedules diverge on. */
  feature?: string;
  /** Input values. */
  inputs?: Value[];
}

/** The result of a `run`, as the engine claims it. */
export interface Result {
  /** What is claimed. */
  claim: Claim;
  /** The strength the engine claims. */
  strength: Strength;
  /** Bounds in force, with whether each was reached. */
  bounds?: Bound[];
  /** The witness. */
  witness?: Witness;
  /** Executions. */
  executions?: Witness[];
  /** Why. */
  reason?: string;
  /** Values. */
  values?: Value[];
  /** Inputs. */
  inputs?: Input[];
  /** Assumptions. */
  assumptions?: string[];
  /** Milliseconds spent. */
  elapsed?: number;
}

/** The result of a `covers` request. */
export interface CoversResult {
  /** Whether the engine takes the question. */
  covers: boolean;
  /** Why not, or how. */
  reason?: string;
}

/** What an engine says about itself in answer to `describe`. */
export interface Description {
  /** The engine's name. */
  name: string;
  /** The engine's own version. */
  version: string;
  /** The protocol version it speaks. */
  protocol: number;
  /** The kinds of question it answers. */
  answers: QuestionKind[];
  /** Declaration kinds it answers about. */
  subjects?: string[];
  /** Bounds it takes. */
  bounds?: BoundName[];
  /** The kind of witness it returns. */
  witness?: WitnessKind;
  /** Model forms it takes. */
  model?: ModelForm[];
  /** The strongest claim it may make. */
  authority?: Strength;
  /** Whether it takes more than one request at a time. */
  concurrent?: boolean;
}

/** A `progress` notification's parameters. */
export interface Progress {
  /** The request the progress concerns. */
  id: number;
  /** Runs so far. */
  runs?: number;
  /** Depth so far. */
  depth?: number;
  /** Steps so far. */
  steps?: number;
  /** Free text. */
  text?: string;
}

/** An error response's error object. */
export interface ErrorObject {
  /** The code. */
  code: ErrorCode;
  /** What went wrong. */
  message: string;
}
