// Fails when calls.ts does not call every operation of openapi/openapi.json.
import { readFileSync } from "node:fs";

const doc = JSON.parse(readFileSync(new URL("../../openapi/openapi.json", import.meta.url)));
const calls = readFileSync(new URL("./calls.ts", import.meta.url), "utf8");
const missing = [];
for (const [path, methods] of Object.entries(doc.paths)) {
  for (const method of Object.keys(methods)) {
    const call = `api.${method.toUpperCase()}("${path}"`;
    if (!calls.includes(call)) missing.push(call);
  }
}
if (missing.length > 0) {
  console.error(`calls.ts does not call:\n  ${missing.join("\n  ")}`);
  process.exit(1);
}
console.log(`calls.ts calls all ${Object.values(doc.paths).flatMap(Object.keys).length} operations`);
