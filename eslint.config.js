// ESLint over the dashboard's modules (web/js, run in the browser) and the node scripts that test
// them (tests/browser, tests/openapi): ESLint's recommended rules, each with its globals.
// Run by the lint_js test: scripts/lint.sh js.
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["web/js/**/*.js"],
    languageOptions: { ecmaVersion: 2025, sourceType: "module", globals: { ...globals.browser, Chart: "readonly" } },
  },
  {
    files: ["tests/browser/**/*.mjs", "tests/openapi/**/*.mjs"],
    languageOptions: { ecmaVersion: 2025, sourceType: "module", globals: { ...globals.node, ...globals.browser } },
  },
];
