import { compilePolicy } from "./server/policy/compile.ts";
import { HANDLERS } from "./server/handlers/index.ts";
