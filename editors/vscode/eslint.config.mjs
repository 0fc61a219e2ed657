// Lint configuration: ESLint's and typescript-eslint's recommended rules, type-aware.
import eslint from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["out/", "dist/", "node_modules/", "*.vsix"] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      eqeqeq: "error",
      curly: "error",
      "no-console": "off",
      "@typescript-eslint/no-floating-promises": [
        "error",
        {
          // node:test's describe() and it() return promises that the runner itself tracks.
          allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["describe", "it", "test"] }],
        },
      ],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
    },
  },
  {
    files: ["**/*.mjs"],
    ...tseslint.configs.disableTypeChecked,
  },
);
