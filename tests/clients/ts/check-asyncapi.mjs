// Parse AsyncAPI documents with the official parser; print each one's diagnostics as JSON.
// node check-asyncapi.mjs FILE...
import { Parser } from "@asyncapi/parser";
import { readFileSync } from "node:fs";

const parser = new Parser();
const report = {};
for (const file of process.argv.slice(2)) {
  const { diagnostics } = await parser.parse(readFileSync(file, "utf8"));
  report[file] = diagnostics.map((d) => ({ severity: d.severity, code: d.code, message: d.message, path: d.path }));
}
console.log(JSON.stringify(report));
