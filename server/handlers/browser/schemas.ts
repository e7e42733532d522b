/**
 * Wire schemas of the browser group's request bodies (see `docs/server/browser.md`). Strict:
 * an unknown key is refused with `invalid_arguments` naming it.
 *
 * @module
 */

import { z } from "zod";

const timeoutMs = z.number().int().min(1).max(120_000);
const selector = z.string().min(1).max(4096);

/** `POST /browser/navigate`. */
export const NavigateBody = z.strictObject({
  url: z.string().min(1),
  wait_until: z.enum(["load", "domcontentloaded", "networkidle", "commit"]).optional(),
  timeout_ms: timeoutMs.optional(),
  viewport: z.strictObject({
    width: z.number().int().min(1).max(4096),
    height: z.number().int().min(1).max(4096),
  }).optional(),
});

/** `POST /browser/screenshot`. */
export const ScreenshotBody = z.strictObject({ full_page: z.boolean().optional() });

/** `POST /browser/click`. */
export const ClickBody = z.strictObject({ selector, timeout_ms: timeoutMs.optional() });

/** `POST /browser/type`. */
export const TypeBody = z.strictObject({
  selector,
  text: z.string().max(1_000_000),
  clear: z.boolean().optional(),
  delay_ms: z.number().int().min(0).max(1000).optional(),
  timeout_ms: timeoutMs.optional(),
});

/** `POST /browser/evaluate`. */
export const EvaluateBody = z.strictObject({
  script: z.string().min(1),
  timeout_ms: timeoutMs.optional(),
});

/** `POST /browser/pdf`. */
export const PdfBody = z.strictObject({
  format: z.enum(["A4", "Letter", "Legal", "A3", "A5", "Tabloid"]).optional(),
  landscape: z.boolean().optional(),
  print_background: z.boolean().optional(),
});
