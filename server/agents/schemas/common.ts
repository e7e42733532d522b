/**
 * Shapes shared by several `/v1/` request schemas.
 *
 * @module
 */

import { z } from "zod";

/** `metadata`: up to 16 pairs, keys up to 64 characters, values up to 512, as the API sets. */
export const metadataSchema = z.record(z.string().max(64), z.string().max(512)).refine(
  (m) => Object.keys(m).length <= 16,
  { message: "at most 16 metadata pairs" },
);
