// Writes a gzip copy next to each built script and stylesheet; the server
// sends it to clients that accept gzip (src/console.rs).
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const dir = "dist/assets";
for (const name of readdirSync(dir)) {
  if (!/\.(js|css)$/.test(name)) continue;
  const raw = readFileSync(join(dir, name));
  const gz = gzipSync(raw, { level: 9 });
  writeFileSync(join(dir, name + ".gz"), gz);
  console.log(`${name}: ${raw.length} B, gzip ${gz.length} B`);
}
