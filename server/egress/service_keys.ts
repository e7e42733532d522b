/**
 * The key under which the server's state holds the egress proxies of a server with a `network`
 * section (`identity_proxies.ts`): a module of its own, so that the confinement, on every
 * server's start path, finds them without loading the proxy's code.
 *
 * @module
 */

/** The key of the identities' egress proxies in the server's state. */
export const EGRESS_SERVICE = "egress";
