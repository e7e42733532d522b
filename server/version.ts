/** The server's version, reported as `server_version` in the capabilities document. */
export const SERVER_VERSION = "0.1.0";
