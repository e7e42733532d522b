/**
 * The configuration fields of an agent that none of its settings name, as the API answers
 * them. An inline agent (a session's own, an automation's target) starts from these.
 *
 * @module
 */

/** A fresh copy of the defaults, in the order the API answers them; the caller may change it. */
export function defaultAgentFields(): Record<string, unknown> {
  return {
    instructions: null,
    model: "",
    multi_agent: { enabled: false, max_concurrent_subagents: null },
    reasoning: { effort: null, summary: null },
    service_tier: "auto",
    text: { format: { type: "text" }, verbosity: null },
    tools: [],
  };
}
